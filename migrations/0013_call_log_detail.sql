-- The call log keeps no secret and more detail (docs/call-log.md).
BEGIN;

-- What getBotCalls shows with detail: true, as one JSON object (NULL when
-- there is nothing): the failure's parameters, the injected fault or delay,
-- and, for params left out for size, a bounded preview of each field with
-- the names of the fields cut.
ALTER TABLE bot_calls ADD COLUMN detail TEXT;

-- A webhook's secret_token was kept as sent until now: replaced as the
-- service replaces it in new records. (The catalogue marks the secret
-- parameters; setWebhook's secret_token was the only one when this ran.)
UPDATE bot_calls SET params = json_set(params, '$.secret_token', '[secret]')
 WHERE method = 'setWebhook' AND params IS NOT NULL AND json_valid(params)
   AND json_type(params, '$.secret_token') IS NOT NULL;

PRAGMA user_version = 13;
COMMIT;
