<?php
// A Symfony LimiterInterface whose every decision is one rl command: consume() is RL.CHECK,
// reserve() RL.CHECK ... MAXWAIT (admitted into debt when the wait stays within maxTime), reset()
// RL.RESET. The decision is taken atomically on the server in one round trip; nothing is read,
// computed and written back here, so no lock is needed and concurrent workers never both take
// the last token.
//
// The limit is sent with each call as `POLICY <id> <limit>...`: the state lives under the
// limiter's id and key, header fields are named after the id, and the server needs no
// configuration. Build limiters with RlRateLimiterFactory.

namespace Rl\RateLimiter;

use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\RateLimit;
use Symfony\Component\RateLimiter\Reservation;

final class RlLimiter implements LimiterInterface
{
    /** The longest MAXWAIT the contract takes (rl's longest duration): reserve() without maxTime. */
    private const UNBOUNDED_WAIT = '3650d';

    /** @var Connection */
    private $connection;
    /** @var string */
    private $policy;
    /** @var string */
    private $key;
    /** @var list<string> */
    private $limits;

    /**
     * @param \Redis|\Predis\ClientInterface|Connection $client
     * @param string       $policy the policy name (the limiter's id): the state's scope and the
     *                             name in RateLimit-Policy
     * @param string       $key    whose limit this is (a user, an IP, a tenant)
     * @param list<string> $limits the contract's limit words, e.g. ['TOKEN_BUCKET', '10', '1m', 'BURST', '20']
     */
    public function __construct($client, string $policy, string $key, array $limits)
    {
        $this->connection = Connection::of($client);
        $this->policy = $policy;
        $this->key = $key;
        $this->limits = $limits;
    }

    /**
     * Waits until `$tokens` are available, as Symfony's token bucket does: taken at once when
     * there is room; taken into debt when the wait stays within `$maxTime` seconds (the
     * Reservation says when to act; its RateLimit is not accepted yet, as Symfony's); otherwise
     * nothing is taken and MaxWaitDurationExceededException carries the denial. A wait is granted
     * on bucket policies only (token_bucket); a window policy takes what fits now. `$tokens`
     * above the limit's capacity can never pass: \InvalidArgumentException, as Symfony's.
     */
    public function reserve(int $tokens = 1, ?float $maxTime = null): Reservation
    {
        // MAXWAIT is in whole ms, rounded down: never a longer wait than the caller accepts.
        $maxMs = $maxTime === null ? null : (int) floor($maxTime * 1000);
        $args = $maxMs === null ? ['MAXWAIT', self::UNBOUNDED_WAIT]
            : ($maxMs >= 1 ? ['MAXWAIT', $maxMs . 'ms'] : []);
        [$reply, $now] = $this->check($tokens, $args);
        $retryMs = (int) $reply[3];
        if ((int) $reply[0] === 1) {
            $rateLimit = RlRateLimit::fromReply($reply, $now, $retryMs === 0);

            return new Reservation($now + $retryMs / 1000, $rateLimit);
        }
        $rateLimit = RlRateLimit::fromReply($reply, $now);
        throw new MaxWaitDurationExceededException(sprintf('The rate limiter wait time ("%d" seconds) is longer than the provided maximum time ("%d" seconds).', $retryMs / 1000, $maxTime ?? 0), $rateLimit);
    }

    /**
     * Takes `$tokens` when every limit has room (all or nothing); the RateLimit is the server's
     * answer, with its header values (RlRateLimit::getHeaders()).
     */
    public function consume(int $tokens = 1): RateLimit
    {
        return RlRateLimit::fromReply($this->check($tokens, [])[0], microtime(true));
    }

    /** Forgets this key's state under these limits (RL.RESET). */
    public function reset(): void
    {
        $this->connection->call(['RL.RESET', $this->key, 'POLICY', $this->policy, ...$this->limits]);
    }

    /**
     * @param list<string> $extra
     *
     * @return array{0: array<int, mixed>, 1: float} the reply and when it came
     */
    private function check(int $tokens, array $extra): array
    {
        if ($tokens < 0) {
            throw new \InvalidArgumentException(sprintf('Cannot consume a negative number of tokens (%d).', $tokens));
        }
        $reply = $this->connection->call(['RL.CHECK', $this->key, 'POLICY', $this->policy, ...$this->limits,
                                          'COST', (string) $tokens, ...$extra, 'HEADERS']);
        $now = microtime(true);
        if (!\is_array($reply) || \count($reply) < 5) {
            throw new CommandErrorException('unexpected reply to RL.CHECK: ' . var_export($reply, true));
        }
        if ((int) $reply[3] === -1) {
            // Never: more than the limit can ever hold (nothing was taken).
            throw new \InvalidArgumentException(sprintf('Cannot reserve more tokens (%d) than the size of the rate limiter (%d).', $tokens, (int) $reply[1]));
        }

        return [$reply, $now];
    }
}
