-- What each capture changed, counted by the registrar as it registers it:
-- the files its tree holds, and the paths added, changed and removed since
-- the capture before (NULL for captures registered before these columns).
ALTER TABLE captures ADD COLUMN files BIGINT;
ALTER TABLE captures ADD COLUMN added BIGINT;
ALTER TABLE captures ADD COLUMN changed BIGINT;
ALTER TABLE captures ADD COLUMN removed BIGINT;
