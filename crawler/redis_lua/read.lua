-- read (OPIC section 2.1), run once the crawler's SQLite batch holding the page committed:
-- the page's cash now goes in equal shares to its children and the virtual page, in one step.
-- Children on this host are credited here; others (and the virtual page) get money transfers
-- in this host's outbox, so the cash of pages + virtual page + transfers in flight is constant.
-- ARGV: uid, owner prefix ("crawler|run|"), dead 0/1, changed (-1 none, 0, 1), now,
--       min refetch interval ('inf': never), unchanged stretch, then pairs (child prefix, uid).
-- Returns {status, counts...}: 1 read, -1 taken by another crawler, -2 unknown, -3 read already
local uid = ARGV[1]
local k = pkey(uid)
local v = redis.call('HMGET', k, 'b', 's', 'r', 'f', 'x', 'st', 'kn', 'fc', 'cc', 'hi')
if v[7] ~= '1' then return {-2, unpack(counts())} end
local owner = redis.call('HGET', P .. ':t', uid)
if v[6] == 't' and (not owner or string.sub(owner, 1, #ARGV[2]) ~= ARGV[2]) then
  return {-1, unpack(counts())}
end
if v[6] ~= 't' and v[6] ~= 'q' then return {-3, unpack(counts())} end
if v[5] == '1' then
  redis.call('HDEL', P .. ':t', uid)
  redis.call('HSET', k, 'st', 'i')
  return {-3, unpack(counts())}
end
local b, s, r, f = num(v[1]), num(v[2]), num(v[3]), num(v[4])
local L0, L1, L2 = levels()
local c = b + offset(r, f, L0, L1, L2) - s
if v[6] == 'q' then redis.call('ZREM', qkey(r, f), uid) end
redis.call('HDEL', P .. ':t', uid)
local dead = ARGV[3] == '1'
local kids = {}
if not dead then
  for i = 8, #ARGV - 1, 2 do
    local tp, ku = ARGV[i], ARGV[i + 1]
    if tp ~= P then
      kids[#kids + 1] = {tp, ku}
    elseif ku ~= uid then
      local kv = redis.call('HMGET', pkey(ku), 'kn', 'x')
      if kv[1] == '1' and kv[2] ~= '1' then kids[#kids + 1] = {tp, ku} end
    end
  end
end
local share = c / (#kids + 1)
for _, kid in ipairs(kids) do
  if kid[1] == P then
    local kk = pkey(kid[2])
    local kv = redis.call('HMGET', kk, 'b', 's', 'r', 'f', 'st')
    local kb = num(kv[1]) + share
    redis.call('HSET', kk, 'b', fmt(kb))
    addB(share)
    if kv[5] == 'q' then redis.call('ZADD', qkey(num(kv[3]), num(kv[4])), fmt(kb - num(kv[2])), kid[2]) end
  else
    send(kid[1], kid[2], share)
  end
end
-- the virtual page takes its share plus the rounding remainder (the total stays exact)
local virt = c - share * #kids
if virt ~= 0 then send('', 0, virt) end
addB(-(b - s))
redis.call('HSET', k, 'hi', fmt(num(v[10]) + c))
if dead then
  redis.call('HSET', k, 'x', '1', 'b', '0', 's', '0', 'st', 'i')
  redis.call('HINCRBY', LV, 'm0', -1)
  if r == 0 then redis.call('HINCRBY', LV, 'm1', -1) end
  if f == 1 then redis.call('HINCRBY', LV, 'm2', -1) end
  return {1, unpack(counts())}
end
if r == 0 then redis.call('HINCRBY', LV, 'm1', -1) end
local ns = offset(1, f, L0, L1, L2)
addB(-ns)
local fc = num(v[8]) + 1
local cc = num(v[9]) + (ARGV[4] == '1' and 1 or 0)
redis.call('HSET', k, 'r', '1', 'b', '0', 's', fmt(ns), 'fc', fc, 'cc', cc)
local minimum = tonumber(ARGV[6])
if ARGV[6] == 'inf' or minimum == nil then
  redis.call('HSET', k, 'st', 'i')
else
  local refetches = fc - 1
  local rate = 1
  if refetches > 0 then rate = math.min(1, cc / refetches) end
  local at = tonumber(ARGV[5]) + minimum * (1 + tonumber(ARGV[7]) * (1 - rate))
  redis.call('ZADD', P .. ':w', fmt(at), uid)
  redis.call('HSET', k, 'st', 'w')
end
return {1, unpack(counts())}
