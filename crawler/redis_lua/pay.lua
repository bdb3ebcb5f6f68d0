-- pay the virtual page out (section 3.3): focus share to focus pages, discovery share of the rest
-- to unread pages, the rest to every live page, split over the hosts by the class sizes they
-- last reported ({g}:wt), as dividend transfers in {g}'s outbox.  KEYS[1] = "{g}:lv".
-- ARGV: focus share, discovery share.  Returns the amount paid (a string).
local total = num(redis.call('HGET', LV, 'virtual'))
if total <= 0 then return '0' end
local wt = redis.call('HGETALL', P .. ':wt')
local T0, T1, T2 = 0, 0, 0
local hosts = {}
for i = 1, #wt, 2 do
  local a, b, c = string.match(wt[i + 1], '(%d+) (%d+) (%d+)')
  a, b, c = tonumber(a), tonumber(b), tonumber(c)
  if a > 0 then
    hosts[#hosts + 1] = {wt[i], a, b, c}
    T0, T1, T2 = T0 + a, T1 + b, T2 + c
  end
end
if T0 <= 0 then return '0' end
local to_focus = 0
if T2 > 0 then to_focus = total * tonumber(ARGV[1]) end
local rest = total - to_focus
local to_unread = 0
if T1 > 0 then to_unread = rest * tonumber(ARGV[2]) end
local to_all = rest - to_unread
local paid = 0
for _, h in ipairs(hosts) do
  local a0 = to_all * h[2] / T0
  local a1 = T1 > 0 and to_unread * h[3] / T1 or 0
  local a2 = T2 > 0 and to_focus * h[4] / T2 or 0
  local tid = P .. '#' .. redis.call('INCR', P .. ':tseq')
  redis.call('HSET', P .. ':out', tid, 'D\t' .. h[1] .. '\t' .. fmt(a0) .. ' ' .. fmt(a1) .. ' ' .. fmt(a2))
  paid = paid + a0 + a1 + a2
end
redis.call('HINCRBYFLOAT', LV, 'virtual', fmt(-paid))
return fmt(paid)
