-- An exec run's output as it came, for its streams: each chunk of a
-- command's stdout or stderr (text, cut at character boundaries) and each
-- command's exit, numbered in the order they were recorded. Bounded as the
-- run's results are (per command and stream), and gone with the run.
CREATE TABLE exec_output (
    run_id  TEXT NOT NULL REFERENCES exec_runs (id) ON DELETE CASCADE,
    seq     BIGINT NOT NULL,
    command BIGINT NOT NULL,
    kind    TEXT NOT NULL,
    body    TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
