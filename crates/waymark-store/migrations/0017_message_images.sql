-- The images a user attached to a message, as the model is sent them: a JSON list of
-- {mime, data} (data in base64), NULL when there are none.
ALTER TABLE messages ADD COLUMN images TEXT;
