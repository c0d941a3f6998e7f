-- Two windows in one atomic check ("100 per minute AND 5000 per day") in Redis + Lua: the
-- baseline bench/run measures `RL.CHECK key SLIDING_WINDOW 100 1m FIXED_WINDOW 5000 1d` against.
-- A sliding window counter (hash, as sliding_window.lua) and a fixed window counter (INCRBY
-- string, as fixed_window.lua); all or nothing: a denial by either window consumes from neither.
-- KEYS[1] = minute key, KEYS[2] = day key; ARGV = limit1, window1_ms, limit2, window2_ms, cost.
-- Reply: {allowed, limit, remaining, retry_after_ms, reset_after_ms} of the binding window.
local l1, w1 = tonumber(ARGV[1]), tonumber(ARGV[2])
local l2, w2 = tonumber(ARGV[3]), tonumber(ARGV[4])
local cost = tonumber(ARGV[5]) or 1

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

-- Window 1: sliding window counter.
local idx = math.floor(now / w1)
local into = now - idx * w1
local s = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local w = tonumber(s[1])
local cur, prev = tonumber(s[2]) or 0, tonumber(s[3]) or 0
if w == nil or w < idx - 1 then
  cur, prev = 0, 0
elseif w == idx - 1 then
  cur, prev = 0, cur
elseif w > idx then
  idx = w
end
local used1 = cur + prev * (w1 - into) / w1
local ok1 = cost <= l1 and used1 + cost <= l1
local retry1 = 0
if not ok1 then retry1 = (cost > l1) and -1 or (w1 - into) end

-- Window 2: fixed window, read only until both windows agree.
local used2 = tonumber(redis.call('GET', KEYS[2])) or 0
local ttl2 = redis.call('PTTL', KEYS[2])
if ttl2 < 0 then ttl2 = w2 end
local ok2 = cost <= l2 and used2 + cost <= l2
local retry2 = 0
if not ok2 then retry2 = (cost > l2) and -1 or ttl2 end

local rem1, rem2 = math.floor(l1 - used1), l2 - used2
if ok1 and ok2 then
  cur = cur + cost
  redis.call('HSET', KEYS[1], 'w', idx, 'cur', cur, 'prev', prev)
  redis.call('PEXPIRE', KEYS[1], 2 * w1 - into)
  if redis.call('INCRBY', KEYS[2], cost) == cost then
    redis.call('PEXPIRE', KEYS[2], w2)
  end
  rem1, rem2 = rem1 - cost, rem2 - cost
  -- The binding window is the one with less left.
  if rem1 <= rem2 then return {1, l1, math.max(0, rem1), 0, 2 * w1 - into} end
  return {1, l2, rem2, 0, ttl2}
end
-- Denied: report the window that denies for longest (never wins over any other value).
if not ok2 and (ok1 or retry2 == -1 or (retry1 ~= -1 and retry2 > retry1)) then
  return {0, l2, math.max(0, rem2), retry2, ttl2}
end
return {0, l1, math.max(0, rem1), retry1, 2 * w1 - into}
