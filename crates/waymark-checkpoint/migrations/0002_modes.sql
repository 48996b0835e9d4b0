-- Each checkpoint's record of permission bits (a blob in the session's store, beside the
-- tree): a rewind puts every file back with its own bits. NULL for checkpoints taken before
-- it was recorded, whose files a rewind gives the user's umask. And the workspace folder the
-- checkpoint was taken of (`device:inode`): a rewind never writes into another folder put in
-- its place, in any process.
ALTER TABLE checkpoints ADD COLUMN modes TEXT CHECK (modes IS NULL OR length(modes) = 40);
ALTER TABLE checkpoints ADD COLUMN root TEXT;
