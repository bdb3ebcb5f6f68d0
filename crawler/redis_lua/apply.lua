-- apply a money transfer to a page of this host, once.  A page that is dead or unknown here
-- passes it on to the virtual page (a transfer in this host's outbox).
-- ARGV: transfer ID, uid, amount, now, seconds to remember the ID.
-- Returns 1 applied, 2 passed on, 0 applied before.
if applied_before(ARGV[1], ARGV[4], ARGV[5]) then return 0 end
local k = pkey(ARGV[2])
local a = tonumber(ARGV[3])
local v = redis.call('HMGET', k, 'kn', 'x', 'b', 's', 'st', 'r', 'f')
if v[1] == '1' and v[2] ~= '1' then
  local b = num(v[3]) + a
  redis.call('HSET', k, 'b', fmt(b))
  addB(a)
  if v[5] == 'q' then redis.call('ZADD', qkey(num(v[6]), num(v[7])), fmt(b - num(v[4])), ARGV[2]) end
else
  send('', 0, a)
  return 2
end
return 1
