-- A goal that implements an approved plan (PM-27): the plan's steps and the verifier's
-- latest verdict on each (JSON list of {text, met}); NULL for other goals.

ALTER TABLE goals ADD COLUMN steps TEXT;
