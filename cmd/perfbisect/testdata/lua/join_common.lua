-- join_common.lua: the schema and options of join.lua (a test workload of
-- perfbisect's: a script that requires a file beside it).

sysbench.cmdline.options = {
   customers = {"Rows of the jc_customer table", 2000},
   orders = {"Orders per customer (jc_order rows = customers x orders)", 2},
   span = {"Customers per join", 100},
}

-- create_tables makes and loads jc_customer and jc_order. The join is on
-- columns without an index (jc_customer.code, jc_order.customer_code): the
-- server reads jc_order through the join buffer.
function create_tables(con)
   con:query([[CREATE TABLE jc_customer (
      id INTEGER NOT NULL PRIMARY KEY,
      code INTEGER NOT NULL,
      name CHAR(30) NOT NULL)]])
   con:query([[CREATE TABLE jc_order (
      id INTEGER NOT NULL AUTO_INCREMENT PRIMARY KEY,
      customer_code INTEGER NOT NULL,
      amount INTEGER NOT NULL)]])
   local n = sysbench.opt.customers
   for first = 1, n, 500 do
      local rows = {}
      for id = first, math.min(first + 499, n) do
         rows[#rows + 1] = string.format("(%d, %d, '%s')", id, id, sysbench.rand.string("customer-####"))
      end
      con:query("INSERT INTO jc_customer (id, code, name) VALUES " .. table.concat(rows, ","))
   end
   for round = 1, sysbench.opt.orders do
      for first = 1, n, 500 do
         local rows = {}
         for id = first, math.min(first + 499, n) do
            rows[#rows + 1] = string.format("(%d, %d)", id, sysbench.rand.uniform(1, 1000))
         end
         con:query("INSERT INTO jc_order (customer_code, amount) VALUES " .. table.concat(rows, ","))
      end
   end
end
