-- Each worker's host image cache as it last reported it (JSON: names,
-- digest, size, layers, shared layers, last use, executors per image),
-- for operators.
ALTER TABLE workers ADD COLUMN images TEXT NOT NULL DEFAULT '[]';
