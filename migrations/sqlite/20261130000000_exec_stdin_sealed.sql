-- Exec stdin is sealed like secretEnv (a JSON array, one entry per command)
-- and dropped once the run has ended; `commands` keeps only its length and
-- digest.
ALTER TABLE exec_runs ADD COLUMN stdin_nonce BLOB;
ALTER TABLE exec_runs ADD COLUMN stdin_ciphertext BLOB;
