ALTER TABLE `webhook_dispatch` ADD `leased_to` integer;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` ADD `lease_token` text;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` ADD `lease_until` text;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` ADD `members` text;