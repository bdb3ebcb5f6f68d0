-- websift Redis frontier: shared helpers, prepended to every script (crawler/redis_frontier.py).
-- KEYS[1] is the slot's anchor key ("{h:<origin>}:lv" for a host, "{g}:lv" for the globals);
-- every other key a script touches is built from its prefix, so one script = one slot.
local LV = KEYS[1]
local P = string.sub(LV, 1, #LV - 3)
-- the frontier's identity: ARGV[1] is the ID the caller's frontier has ("{g}:lv" id, copied
-- into each host's "lv" as fid when the host enters); the script's own ARGV follow it.  A
-- slot that lost its data (a Redis restarted empty, flushed, another frontier) refuses every
-- script before any write; only add and apply (MAY_BE_NEW, set per script by
-- crawler/redis_frontier.py) may meet a host that has no "lv" yet, and add gives it the ID.
local FID = table.remove(ARGV, 1)
local HAVE = redis.call('HGET', LV, LV == '{g}:lv' and 'id' or 'fid')
if HAVE ~= FID and (HAVE or not MAY_BE_NEW) then
  return redis.error_reply('WEBSIFT-LOST this Redis no longer holds frontier ' ..
    string.sub(FID, 1, 8) .. ' (' .. (HAVE and ('it holds frontier ' .. string.sub(HAVE, 1, 8))
    or 'it holds nothing of it: restarted without persistence, or flushed') .. ')')
end
local function num(x) return tonumber(x) or 0 end
local function fmt(x) return string.format('%.17g', x) end
local function levels()
  local v = redis.call('HMGET', LV, 'L0', 'L1', 'L2')
  return num(v[1]), num(v[2]), num(v[3])
end
-- cash now = base + offset(classes) - seen: L0 every live page, L1 unread pages, L2 focus pages
local function offset(r, f, L0, L1, L2)
  local o = L0
  if r == 0 then o = o + L1 end
  if f == 1 then o = o + L2 end
  return o
end
-- the four pending queues of a host: 0 unread, 1 unread focus, 2 refresh, 3 refresh focus
local function qkey(r, f) return P .. ':q:' .. ((r == 1 and 2 or 0) + f) end
local function pkey(uid) return P .. ':p:' .. uid end
local function addB(d) redis.call('HINCRBYFLOAT', LV, 'B', fmt(d)) end
-- a money transfer (OPIC section 4.1) waiting in this slot's outbox: target slot prefix
-- ('' = the virtual page), page ID, amount
local function send(target, uid, amount)
  local tid = P .. '#' .. redis.call('INCR', P .. ':tseq')
  redis.call('HSET', P .. ':out', tid, target .. '\t' .. uid .. '\t' .. fmt(amount))
end
-- a transfer applied here, once: its ID is kept (scored by when) for ARGV-given seconds, long
-- after its source forgot it, so a late or repeated delivery of it is a no-op
local function applied_before(tid, now, keep)
  local ap = P .. ':ap'
  if redis.call('ZSCORE', ap, tid) then return true end
  redis.call('ZADD', ap, now, tid)
  redis.call('ZREMRANGEBYSCORE', ap, '-inf', tonumber(now) - tonumber(keep))
  return false
end
local function counts()
  local m = redis.call('HMGET', LV, 'm0', 'm1', 'm2')
  local pending = 0
  for k = 0, 3 do pending = pending + redis.call('ZCARD', P .. ':q:' .. k) end
  return {num(m[1]), num(m[2]), num(m[3]), pending, redis.call('HLEN', P .. ':t'),
          redis.call('ZCARD', P .. ':w')}
end
