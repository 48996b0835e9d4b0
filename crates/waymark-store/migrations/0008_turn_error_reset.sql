-- A turn stopped by a provider's usage limit keeps how long the provider said the limit
-- lasts (milliseconds after the turn ended), so a goal can be resumed when it resets.
-- Older turns have none.

ALTER TABLE turns ADD COLUMN error_resets_in_ms INTEGER CHECK (error_resets_in_ms >= 0);
