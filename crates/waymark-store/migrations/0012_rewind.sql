-- Rewind: a turn can leave the model's history. Its rows stay, in the history and in the
-- event log, for the transcript (which shows it folded) and for undoing the rewind.
ALTER TABLE turns ADD COLUMN rewound INTEGER NOT NULL DEFAULT 0 CHECK (rewound IN (0, 1));

-- The rewound turns a compaction's summary left out (a JSON list of turn ids among the rows
-- it covers): the summary stands in for those rows only while that set is still the same.
ALTER TABLE compactions ADD COLUMN rewound TEXT NOT NULL DEFAULT '[]';
