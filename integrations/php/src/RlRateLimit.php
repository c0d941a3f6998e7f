<?php
// Symfony's RateLimit built from one rl reply, plus the reply's own header values. Every number
// is the server's: getRemainingTokens is `remaining`, getLimit is `limit`, getRetryAfter is the
// moment of the reply plus `retry_after_ms` (the moment itself when nothing needs waiting for),
// and getHeaders() the HEADERS element (X-RateLimit-*, RateLimit-Policy, RateLimit, Retry-After
// when denied), computed on the server, copied unchanged.

namespace Rl\RateLimiter;

use Symfony\Component\RateLimiter\RateLimit;

class RlRateLimit extends RateLimit
{
    /** @var array<string, string> */
    private $headers;
    /** @var int */
    private $retryAfterMs;
    /** @var int */
    private $resetAfterMs;

    /**
     * @param array<string, string> $headers
     */
    public function __construct(int $remaining, \DateTimeImmutable $retryAfter, bool $accepted, int $limit,
                                array $headers, int $retryAfterMs, int $resetAfterMs)
    {
        parent::__construct($remaining, $retryAfter, $accepted, $limit);
        $this->headers = $headers;
        $this->retryAfterMs = $retryAfterMs;
        $this->resetAfterMs = $resetAfterMs;
    }

    /**
     * A RESP2 reply [allowed, limit, remaining, retry_after_ms, reset_after_ms, [name, value, ...]]
     * read at `$now` (Unix seconds, microtime(true)).
     *
     * @param array<int, mixed> $reply
     */
    public static function fromReply(array $reply, float $now, ?bool $accepted = null): self
    {
        $retryMs = (int) $reply[3];
        $flat = $reply[5] ?? [];
        $headers = [];
        for ($i = 0; $i + 1 < \count($flat); $i += 2) {
            $headers[(string) $flat[$i]] = (string) $flat[$i + 1];
        }

        return new self((int) $reply[2], self::at($now + max(0, $retryMs) / 1000),
                        $accepted ?? (bool) $reply[0], (int) $reply[1], $headers, $retryMs, (int) $reply[4]);
    }

    /** A Unix time in seconds as a DateTimeImmutable, to the microsecond. */
    public static function at(float $unixSeconds): \DateTimeImmutable
    {
        return \DateTimeImmutable::createFromFormat('U.u', sprintf('%.6F', $unixSeconds));
    }

    /** @return array<string, string> the server's header values (empty without HEADERS) */
    public function getHeaders(): array
    {
        return $this->headers;
    }

    /** The reply's retry_after_ms: -1 when the call can never pass. */
    public function getRetryAfterMs(): int
    {
        return $this->retryAfterMs;
    }

    /** The reply's reset_after_ms: until the binding limit is fully replenished. */
    public function getResetAfterMs(): int
    {
        return $this->resetAfterMs;
    }
}
