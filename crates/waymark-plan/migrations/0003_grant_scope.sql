-- Grants given in plan mode were marked by a column of the core's grants table; they now
-- carry plan mode's scope, and the column goes. Pending permission questions asked in plan
-- mode say the same in their payload.

UPDATE grants SET scope = 'plan' WHERE plan_mode = 1;
ALTER TABLE grants DROP COLUMN plan_mode;

UPDATE questionnaires
    SET payload = json_set(json_remove(payload, '$.plan_mode'), '$.scope', 'plan')
    WHERE kind = 'permission' AND json_extract(payload, '$.plan_mode') = 1;
UPDATE questionnaires
    SET payload = json_remove(payload, '$.plan_mode')
    WHERE kind = 'permission' AND json_type(payload, '$.plan_mode') IS NOT NULL;
