-- Sliding window counter in Redis + Lua (current and previous fixed window, the previous one
-- weighted by its overlap): the baseline bench/run measures RL.CHECK ... SLIDING_WINDOW against.
-- Not one of the seed scripts; it is the variant the seeds recommend, written the same way
-- (one hash, HMGET / HSET / PEXPIRE, clock from TIME).
-- KEYS[1] = counter key; ARGV = limit, window_ms, cost.
-- Reply: {allowed, limit, remaining, retry_after_ms, reset_after_ms}.
local limit = tonumber(ARGV[1])
local window = tonumber(ARGV[2])
local cost = tonumber(ARGV[3]) or 1

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local idx = math.floor(now / window)
local into = now - idx * window -- ms elapsed in the current window

local s = redis.call('HMGET', KEYS[1], 'w', 'cur', 'prev')
local w = tonumber(s[1])
local cur, prev = tonumber(s[2]) or 0, tonumber(s[3]) or 0
if w == nil or w < idx - 1 then
  cur, prev = 0, 0
elseif w == idx - 1 then
  cur, prev = 0, cur
elseif w > idx then
  idx = w -- the clock went back: keep counting in the newer window
end

local used = cur + prev * (window - into) / window
local allowed, retry = 0, 0
if cost > limit then
  retry = -1
elseif used + cost <= limit then
  cur = cur + cost
  used = used + cost
  allowed = 1
elseif cur + cost <= limit and prev > 0 then
  -- The previous window's weight must fall until the cost fits.
  local need = (window - into) - (limit - cur - cost) * window / prev
  retry = math.max(1, math.ceil(need))
else
  retry = window - into -- only the next window has room
end
local reset = 2 * window - into
if allowed == 1 then
  redis.call('HSET', KEYS[1], 'w', idx, 'cur', cur, 'prev', prev)
  redis.call('PEXPIRE', KEYS[1], reset)
end
return {allowed, limit, math.max(0, math.floor(limit - used)), retry, reset}
