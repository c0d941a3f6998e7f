<?php
// RlLimiter and RlRateLimiterFactory through Symfony's own interfaces, against a real rl-server
// and a real Redis with rl.so, over phpredis and Predis: what consume, reserve (its max-time
// rule), reset and RateLimit mean is Symfony's, every value the server's.

namespace Rl\RateLimiter\Tests;

use PHPUnit\Framework\TestCase;
use Rl\RateLimiter\CommandErrorException;
use Rl\RateLimiter\RlRateLimit;
use Rl\RateLimiter\RlRateLimiterFactory;
use Symfony\Component\RateLimiter\Exception\MaxWaitDurationExceededException;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;

final class LimiterTest extends TestCase
{
    public function targets(): array
    {
        return Targets::all();
    }

    private function factory(string $library, string $server, array $config): RlRateLimiterFactory
    {
        return new RlRateLimiterFactory($config + ['id' => 'api' . bin2hex(random_bytes(4))],
                                        Targets::connect($library, $server));
    }

    /** @dataProvider targets */
    public function testTokenBucketConsumeIsTheServersDecision(string $library, string $server): void
    {
        $factory = $this->factory($library, $server, ['policy' => 'token_bucket', 'limit' => 5,
                                                      'rate' => ['interval' => '1 minute', 'amount' => 5]]);
        $this->assertSame(['TOKEN_BUCKET', '5', '60s', 'BURST', '5'], $factory->getLimitWords());
        $limiter = $factory->create('alice');
        for ($i = 4; $i >= 0; --$i) {
            $limit = $limiter->consume();
            $this->assertTrue($limit->isAccepted());
            $this->assertSame($i, $limit->getRemainingTokens());
            $this->assertSame(5, $limit->getLimit());
            $this->assertSame((string) $i, $limit->getHeaders()['X-RateLimit-Remaining']);
            $this->assertArrayNotHasKey('Retry-After', $limit->getHeaders());
        }
        $before = microtime(true);
        $denied = $limiter->consume();
        $this->assertFalse($denied->isAccepted());
        $this->assertSame(0, $denied->getRemainingTokens());
        // One token of 5 per minute comes back in ~12 s; the header is the server's rounding.
        $wait = (float) $denied->getRetryAfter()->format('U.u') - $before;
        $this->assertGreaterThan(11.0, $wait);
        $this->assertLessThan(12.5, $wait);
        $this->assertSame((string) (int) ceil($denied->getRetryAfterMs() / 1000), $denied->getHeaders()['Retry-After']);
        $this->assertStringStartsWith('"api', $denied->getHeaders()['RateLimit-Policy']);
        $this->assertTrue($factory->create('bob')->consume()->isAccepted(), 'another key is unaffected');
        // A cost above the bucket can never pass: Symfony's InvalidArgumentException.
        $this->expectException(\InvalidArgumentException::class);
        $factory->create('carol')->consume(6);
    }

    /** @dataProvider targets */
    public function testReserveWaitsWithinMaxTimeAndOtherwiseTakesNothing(string $library, string $server): void
    {
        // 2 tokens, one back per second.
        $factory = $this->factory($library, $server, ['policy' => 'token_bucket', 'limit' => 2,
                                                      'rate' => ['interval' => '1 second', 'amount' => 1]]);
        $limiter = $factory->create('alice');
        $first = $limiter->reserve(2);
        $this->assertSame(0.0, $first->getWaitDuration());
        $this->assertTrue($first->getRateLimit()->isAccepted());
        // Empty bucket: one token needs ~1 s, within 1.5 s: taken into debt.
        $second = $limiter->reserve(1, 1.5);
        $this->assertGreaterThan(0.8, $second->getWaitDuration());
        $this->assertLessThanOrEqual(1.01, $second->getWaitDuration());
        $this->assertFalse($second->getRateLimit()->isAccepted(), 'as Symfony: accepted once waited for');
        // The debt counts: the next token is ~2 s away, beyond 1.5 s: refused, nothing taken.
        try {
            $limiter->reserve(1, 1.5);
            $this->fail('expected MaxWaitDurationExceededException');
        } catch (MaxWaitDurationExceededException $e) {
            $wait = (float) $e->getRateLimit()->getRetryAfter()->format('U.u') - microtime(true);
            $this->assertGreaterThan(1.5, $wait);
            $this->assertLessThanOrEqual(2.01, $wait);
            $this->assertFalse($e->getRateLimit()->isAccepted());
        }
        // Nothing was taken by the refusal: still ~2 s, granted without a bound.
        $third = $limiter->reserve(1);
        $this->assertGreaterThan(1.5, $third->getWaitDuration());
        $this->assertLessThanOrEqual(2.01, $third->getWaitDuration());
        // consume() is reserve with no wait: denied while in debt.
        $this->assertFalse($limiter->consume()->isAccepted());
        $this->expectException(\InvalidArgumentException::class);
        $limiter->reserve(3, 10.0);
    }

    /** @dataProvider targets */
    public function testReservedCallersAreSpacedExactly(string $library, string $server): void
    {
        // 10 per second, no burst: ten reservations in a row are 100 ms apart.
        $limiter = $this->factory($library, $server, ['policy' => 'token_bucket', 'limit' => 1,
                                                      'rate' => ['interval' => '1 second', 'amount' => 10]])->create('x');
        $acts = [];
        for ($i = 0; $i < 10; ++$i) {
            $acts[] = $limiter->reserve(1, 5.0)->getTimeToAct();
        }
        for ($i = 1; $i < 10; ++$i) {
            $gap = $acts[$i] - $acts[$i - 1];
            $this->assertGreaterThan(0.05, $gap, "reservation $i");
            $this->assertLessThan(0.15, $gap, "reservation $i");
        }
    }

    /** @dataProvider targets */
    public function testWindowsAndReset(string $library, string $server): void
    {
        foreach (['fixed_window' => 'FIXED_WINDOW', 'sliding_window' => 'SLIDING_WINDOW'] as $policy => $word) {
            $factory = $this->factory($library, $server, ['policy' => $policy, 'limit' => 3, 'interval' => '1 minute']);
            $this->assertSame([$word, '3', '60s'], $factory->getLimitWords());
            $limiter = $factory->create('alice');
            $this->assertSame(3, $limiter->consume(2)->getLimit());
            $this->assertTrue($limiter->consume()->isAccepted());
            $denied = $limiter->consume();
            $this->assertFalse($denied->isAccepted(), $policy);
            $this->assertGreaterThan(microtime(true), (float) $denied->getRetryAfter()->format('U.u'));
            // A window grants no wait: what does not fit now is refused, nothing taken.
            try {
                $limiter->reserve(1, 120.0);
                $this->fail("$policy: expected MaxWaitDurationExceededException");
            } catch (MaxWaitDurationExceededException $e) {
                $this->assertSame(0, $e->getRateLimit()->getRemainingTokens());
            }
            $limiter->reset();
            $this->assertSame(2, $limiter->consume()->getRemainingTokens(), "$policy after reset");
        }
    }

    /** @dataProvider targets */
    public function testNoLimitAndBadConfiguration(string $library, string $server): void
    {
        $this->assertInstanceOf(NoLimiter::class, $this->factory($library, $server, ['policy' => 'no_limit'])->create('a'));
        // An interval below the contract's resolution is the server's error, its text unchanged.
        $limiter = $this->factory($library, $server, ['policy' => 'fixed_window', 'limit' => 0, 'interval' => '1 minute'])->create('a');
        $this->expectException(CommandErrorException::class);
        $limiter->consume();
    }

    /** @dataProvider targets */
    public function testConcurrentWorkersNeverShareTheLastToken(string $library, string $server): void
    {
        // Limit 5, 8 worker processes at once: exactly 5 pass.
        $config = ['id' => 'conc' . bin2hex(random_bytes(4)), 'policy' => 'token_bucket', 'limit' => 5,
                   'rate' => ['interval' => '1 hour', 'amount' => 5]];
        $pids = [];
        for ($i = 0; $i < 8; ++$i) {
            $pid = pcntl_fork();
            if ($pid === 0) {
                $limit = (new RlRateLimiterFactory($config, Targets::connect($library, $server)))->create('hot')->consume();
                exit($limit->isAccepted() ? 0 : 3);
            }
            $pids[] = $pid;
        }
        $passed = 0;
        foreach ($pids as $pid) {
            pcntl_waitpid($pid, $status);
            $code = pcntl_wexitstatus($status);
            $this->assertContains($code, [0, 3]);
            $passed += $code === 0 ? 1 : 0;
        }
        $this->assertSame(5, $passed);
    }
}
