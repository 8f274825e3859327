-- Webhooks at the floor of rows (docs/webhooks.md#design). Hand-edited after drizzle-kit: the delivery log is WITHOUT ROWID
-- (a row is one write), and the data moves over: finished and attempted deliveries into the log, each subscription's pending
-- deliveries into its place in `webhook_dispatch.queue` (after the event before its first pending one), the fan-out cursor into
-- `webhook_dispatch.event_id`. Deliveries never attempted are not rows any more: they are the wanted events after that place.
CREATE TABLE `webhook_dispatch` (
	`id` integer PRIMARY KEY NOT NULL,
	`event_id` integer NOT NULL,
	`queue` text DEFAULT '{}' NOT NULL,
	`lease_token` text,
	`lease_until` text,
	CONSTRAINT "webhook_dispatch_one_row" CHECK("webhook_dispatch"."id" = 1)
);
--> statement-breakpoint
INSERT INTO `webhook_dispatch` (`id`, `event_id`, `queue`) VALUES (
	1,
	(SELECT `last_event_id` FROM `webhook_fanout` WHERE `id` = 1),
	(SELECT coalesce(json_group_object(CAST(h.`webhook_id` AS TEXT), json_object('after', h.`event_id` - 1, 'attempts', h.`attempts`, 'due', h.`next_attempt_at`)), '{}')
		FROM `webhook_deliveries` h
		WHERE h.`status` = 'pending' AND h.`event_id` = (SELECT min(p.`event_id`) FROM `webhook_deliveries` p WHERE p.`webhook_id` = h.`webhook_id` AND p.`status` = 'pending'))
);
--> statement-breakpoint
CREATE TABLE `webhook_redeliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`webhook_id` integer NOT NULL,
	`event_id` integer NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text NOT NULL,
	`created_at` text NOT NULL,
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `webhook_redeliveries_webhook_id_idx` ON `webhook_redeliveries` (`webhook_id`);--> statement-breakpoint
CREATE INDEX `webhook_redeliveries_due_idx` ON `webhook_redeliveries` (`next_attempt_at`);--> statement-breakpoint
DROP TABLE `webhook_fanout`;--> statement-breakpoint
CREATE TABLE `__new_webhook_deliveries` (
	`webhook_id` integer NOT NULL,
	`status` text NOT NULL,
	`event_id` integer NOT NULL,
	`event_type` text NOT NULL,
	`attempts` integer NOT NULL,
	`next_attempt_at` text,
	`last_attempt_at` text NOT NULL,
	`last_status_code` integer,
	`last_error` text,
	`finished_at` text,
	PRIMARY KEY(`webhook_id`, `status`, `event_id`),
	FOREIGN KEY (`webhook_id`) REFERENCES `webhooks`(`id`) ON UPDATE no action ON DELETE cascade
) WITHOUT ROWID;
--> statement-breakpoint
INSERT INTO `__new_webhook_deliveries`("webhook_id", "status", "event_id", "event_type", "attempts", "next_attempt_at", "last_attempt_at", "last_status_code", "last_error", "finished_at")
	SELECT d."webhook_id", d."status", d."event_id", e."type", d."attempts",
		CASE WHEN d."status" = 'pending' THEN d."next_attempt_at" END,
		coalesce(d."last_attempt_at", d."next_attempt_at"), d."last_status_code", d."last_error",
		CASE WHEN d."status" <> 'pending' THEN d."next_attempt_at" END
	FROM `webhook_deliveries` d JOIN `events` e ON e."id" = d."event_id"
	WHERE d."attempts" > 0;--> statement-breakpoint
DROP TABLE `webhook_deliveries`;--> statement-breakpoint
ALTER TABLE `__new_webhook_deliveries` RENAME TO `webhook_deliveries`;--> statement-breakpoint
DROP INDEX `webhooks_failing_idx`;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `previous_secret` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `previous_secret_until` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `enabled` integer DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `types_since` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `previous_events` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `paused_after` integer;
