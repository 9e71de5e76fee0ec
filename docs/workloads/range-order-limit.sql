# range-order-limit.sql: one query, the shape of MySQL bug #119541 (8.0.39 ->
# 8.0.40: a range on a secondary index with ORDER BY ... LIMIT two to three
# times slower). The OLTP mix would hide a regression in one query; this file
# measures that query alone: every event is one autocommit SELECT.
#
#   perfbisect start --good mysql-8.0.39 --bad mysql-8.0.40 --my-cnf bench.cnf \
#       --workload docs/workloads/range-order-limit.sql --table-size 1000000

set groups = {table-size}/100
set width = 5
set limit = 10

table t1 rows {table-size}
  CREATE TABLE t1 (
    id INTEGER NOT NULL PRIMARY KEY,
    grp INTEGER NOT NULL,
    created INTEGER NOT NULL,
    payload CHAR(60) NOT NULL);
  column id = seq
  column grp = uniform 1 {groups}
  column created = uniform 1 1000000000
  column payload = string "###########-###########-###########-###########-##########"

after load
  CREATE INDEX grp_created ON t1 (grp, created);

generator g = default 1 {groups}-{width}

transaction range_order_limit weight 1 autocommit
  SELECT id, payload FROM t1 WHERE grp BETWEEN ?g AND ?g+{width} ORDER BY grp, created LIMIT {limit};
