# join.sql: a join of two tables on columns without an index, read through
# the join buffer: the kind of statement sysbench's OLTP scripts never run,
# and the one a change to the join cache (join_cache_level,
# join_buffer_size, the hash join) moves.
#
#   perfbisect start ... --workload docs/workloads/join.sql --workload-options "--span=50"

set customers = {table-size}
set orders = 2
set span = 100

table customer rows {customers}
  CREATE TABLE customer (
    id INTEGER NOT NULL PRIMARY KEY,
    code INTEGER NOT NULL,
    name CHAR(30) NOT NULL);
  column id = seq
  column code = seq
  column name = string "customer-########"

table orders rows {customers}*{orders}
  CREATE TABLE orders (
    id INTEGER NOT NULL PRIMARY KEY,
    customer_code INTEGER NOT NULL,
    amount INTEGER NOT NULL);
  column id = seq
  column customer_code = cycle 1 {customers}
  column amount = uniform 1 1000

generator first = uniform 1 {customers}-{span}+1

transaction customers_orders weight 1 autocommit
  SELECT COUNT(*), SUM(o.amount)
    FROM customer c JOIN orders o ON o.customer_code = c.code
   WHERE c.id BETWEEN ?first AND ?first+{span}-1;
