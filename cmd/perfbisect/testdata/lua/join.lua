#!/usr/bin/env sysbench
-- join.lua: a join of two tables on columns without an index, the kind of
-- statement a small join buffer slows down and sysbench's OLTP scripts never
-- run. A test workload of perfbisect's.

require("join_common")

function prepare()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   create_tables(con)
   con:disconnect()
end

function cleanup()
   local drv = sysbench.sql.driver()
   local con = drv:connect()
   con:query("DROP TABLE IF EXISTS jc_order")
   con:query("DROP TABLE IF EXISTS jc_customer")
   con:disconnect()
end

function thread_init()
   drv = sysbench.sql.driver()
   con = drv:connect()
end

function thread_done()
   con:disconnect()
end

function event()
   local span = sysbench.opt.span
   local first = sysbench.rand.uniform(1, math.max(1, sysbench.opt.customers - span + 1))
   con:query(string.format(
      "SELECT COUNT(*), SUM(o.amount) FROM jc_customer c JOIN jc_order o ON o.customer_code = c.code WHERE c.id BETWEEN %d AND %d",
      first, first + span - 1))
end
