-- What each webhook delivery attempt sent and got back (getWebhookDeliveries
-- with detail): the request's headers and body, the response's headers and
-- body, each bounded to 4 KiB when recorded, the secret-token header and
-- credentials redacted. Headers are a JSON object of name to value; the
-- response columns stay NULL when no answer came, and all of them on the
-- records of attempts made before this migration.
BEGIN;

ALTER TABLE webhook_deliveries ADD COLUMN request_headers TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN request_body TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN request_body_truncated INTEGER;
ALTER TABLE webhook_deliveries ADD COLUMN response_headers TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN response_body TEXT;
ALTER TABLE webhook_deliveries ADD COLUMN response_body_truncated INTEGER;

PRAGMA user_version = 14;
COMMIT;
