-- Each worker's warm pool as it last reported it (JSON: image, target,
-- idle, starting per image), for operators.
ALTER TABLE workers ADD COLUMN warm_pool TEXT NOT NULL DEFAULT '[]';
