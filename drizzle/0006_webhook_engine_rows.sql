DROP INDEX `webhook_redeliveries_due_idx`;--> statement-breakpoint
DROP INDEX `webhook_redeliveries_webhook_id_idx`;--> statement-breakpoint
CREATE INDEX `webhook_redeliveries_webhook_id_idx` ON `webhook_redeliveries` (`webhook_id`,`next_attempt_at`);--> statement-breakpoint
ALTER TABLE `webhooks` ADD `place` integer;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `retry_at` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `due_at` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `lease_token` text;--> statement-breakpoint
ALTER TABLE `webhooks` ADD `failing_since` text;--> statement-breakpoint
-- A paused subscription's place, and each queue entry's place, attempts and due time, move to the subscription's own row.
UPDATE `webhooks` SET `place` = `paused_after` WHERE `paused_after` IS NOT NULL;--> statement-breakpoint
UPDATE `webhooks` SET
  `place` = (SELECT json_extract(q.value, '$.after') FROM `webhook_dispatch` d, json_each(d.queue) q WHERE CAST(q.key AS INTEGER) = `webhooks`.`id`),
  `attempts` = coalesce((SELECT json_extract(q.value, '$.attempts') FROM `webhook_dispatch` d, json_each(d.queue) q WHERE CAST(q.key AS INTEGER) = `webhooks`.`id`), 0),
  `retry_at` = (SELECT CASE WHEN json_extract(q.value, '$.attempts') > 0 THEN json_extract(q.value, '$.due') END FROM `webhook_dispatch` d, json_each(d.queue) q WHERE CAST(q.key AS INTEGER) = `webhooks`.`id`)
WHERE `id` IN (SELECT CAST(q.key AS INTEGER) FROM `webhook_dispatch` d, json_each(d.queue) q);--> statement-breakpoint
-- Every enabled subscription with a place or a redelivery is due (since always): its first claim sends what is due and sets its next due time.
UPDATE `webhooks` SET `due_at` = '1970-01-01T00:00:00.000Z'
WHERE `enabled` AND (`place` IS NOT NULL OR EXISTS (SELECT 1 FROM `webhook_redeliveries` r WHERE r.`webhook_id` = `webhooks`.`id`));--> statement-breakpoint
CREATE INDEX `webhooks_due_at_idx` ON `webhooks` (`due_at`) WHERE "webhooks"."due_at" IS NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` DROP COLUMN `queue`;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` DROP COLUMN `lease_token`;--> statement-breakpoint
ALTER TABLE `webhook_dispatch` DROP COLUMN `lease_until`;--> statement-breakpoint
ALTER TABLE `webhooks` DROP COLUMN `paused_after`;
