CREATE TABLE `webhook_event_types` (
	`type` text NOT NULL,
	`webhook_id` integer NOT NULL,
	PRIMARY KEY(`type`, `webhook_id`),
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_event_types_webhook_id_idx` ON `webhook_event_types` (`webhook_id`);--> statement-breakpoint
CREATE TABLE `webhook_fanout` (
	`id` integer PRIMARY KEY NOT NULL,
	`last_event_id` integer NOT NULL,
	CONSTRAINT "webhook_fanout_one_row" CHECK("webhook_fanout"."id" = 1)
);
--> statement-breakpoint
CREATE INDEX `accounts_staff_idx` ON `accounts` (`role`) WHERE "accounts"."role" = 'staff';--> statement-breakpoint
CREATE INDEX `api_keys_revoked_at_idx` ON `api_keys` (`revoked_at`) WHERE "api_keys"."revoked_at" is not null;--> statement-breakpoint
CREATE INDEX `idempotency_keys_created_at_idx` ON `idempotency_keys` (`created_at`);--> statement-breakpoint
CREATE INDEX `orders_pet_id_idx` ON `orders` (`pet_id`);--> statement-breakpoint
CREATE INDEX `orders_complete_idx` ON `orders` (`complete`);--> statement-breakpoint
CREATE INDEX `orders_account_id_pet_id_idx` ON `orders` (`account_id`,`pet_id`);--> statement-breakpoint
CREATE INDEX `orders_account_id_complete_idx` ON `orders` (`account_id`,`complete`);--> statement-breakpoint
CREATE INDEX `pets_category_id_status_idx` ON `pets` (`category_id`,`status`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_event_id_idx` ON `webhook_deliveries` (`event_id`);--> statement-breakpoint
CREATE INDEX `webhooks_failing_idx` ON `webhooks` (`status`) WHERE "webhooks"."status" = 'failing';--> statement-breakpoint
INSERT INTO `webhook_fanout` (`id`, `last_event_id`) VALUES (1, coalesce((SELECT min(`last_event_id`) FROM `webhooks`), (SELECT max(`id`) FROM `events`), 0));--> statement-breakpoint
INSERT INTO `webhook_event_types` (`type`, `webhook_id`) SELECT DISTINCT j.`value`, w.`id` FROM `webhooks` w, json_each(w.`events`) j;
