# simple-allcols.sql: a point select of every column, autocommit, as Mark
# Callaghan's "simple-allcols" sysbench test (set beside oltp-ro in his
# userstat measurements).

table sbtest1 rows {table-size}
  CREATE TABLE sbtest1 (
    id INTEGER NOT NULL PRIMARY KEY,
    k INTEGER NOT NULL DEFAULT 0,
    c CHAR(120) NOT NULL DEFAULT '',
    pad CHAR(60) NOT NULL DEFAULT '');
  column id = seq
  column k = default 1 {table-size}
  column c = string "###########-###########-###########-###########-###########-###########-###########-###########-###########-###########"
  column pad = string "###########-###########-###########-###########-###########"

after load
  CREATE INDEX k_1 ON sbtest1 (k);

generator id = default 1 {table-size}

transaction point_select_allcols weight 1 autocommit
  SELECT id, k, c, pad FROM sbtest1 WHERE id = ?id;
