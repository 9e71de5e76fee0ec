# simple-handler.sql: a HANDLER read by primary key, autocommit, as Mark
# Callaghan's "simple-handler" sysbench test. The table is opened once per
# connection; the read is sent as text where the server will not prepare it.

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

connection
  HANDLER sbtest1 OPEN;

generator id = default 1 {table-size}

transaction handler_read weight 1 autocommit
  HANDLER sbtest1 READ `PRIMARY` = (?id);
