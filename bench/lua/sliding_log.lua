-- Sliding window log in Redis + Lua (a ZSET of accepted requests): the baseline bench/run
-- measures RL.CHECK ... SLIDING_LOG against. Same steps as the seed script (ZREMRANGEBYSCORE,
-- ZCARD, ZADD, PEXPIRE) with the clock read by TIME, plus the exact reset / retry-after that
-- RL.CHECK returns, so both sides give the same five fields.
-- KEYS[1] = log key; ARGV = limit, window_ms, cost.
-- Reply: {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3]) or 1

local t = redis.call('TIME')
-- Scores in microseconds: whole numbers below 2^53, exact in a double.
local now_us = tonumber(t[1]) * 1000000 + tonumber(t[2])
local window_us = window * 1000

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us - window_us)
local count = redis.call('ZCARD', KEYS[1])

-- Time in ms until the i-th oldest entry (0-based) leaves the window.
local function leaves_after(i)
  local e = redis.call('ZRANGE', KEYS[1], i, i, 'WITHSCORES')
  if e[2] == nil then return 0 end
  return math.ceil((tonumber(e[2]) + window_us - now_us) / 1000)
end

if cost > limit then
  return {0, limit, math.max(0, limit - count), -1, leaves_after(math.max(count - 1, 0))}
end
if count + cost <= limit then
  -- Members only need to be unique within the key: the TIME string plus the entry's position
  -- (several calls in one microsecond get different positions, or are denied).
  local stamp = t[1] .. string.format('%06d', tonumber(t[2]))
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], now_us, stamp .. ':' .. (count + i))
  end
  redis.call('PEXPIRE', KEYS[1], window)
  return {1, limit, limit - count - cost, 0, leaves_after(count + cost - 1)}
end
-- Denied: wait until enough of the oldest entries have left for `cost` more to fit.
return {0, limit, limit - count, leaves_after(count + cost - limit - 1), leaves_after(count - 1)}
