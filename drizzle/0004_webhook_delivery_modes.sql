ALTER TABLE `webhooks` ADD `ordering` text DEFAULT 'strict' NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `max_in_flight` integer DEFAULT 10 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `rate_limit` integer;