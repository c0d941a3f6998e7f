<?php
// Symfony's RateLimiterFactory, configured the same way, creating RlLimiter instances: the three
// lines that switch an application from Symfony's storage and lock to rl are the storage
// argument (a phpredis or Predis connection instead of a StorageInterface) and the class name.
//
//   id       the limiter's name (the state's scope and the name in RateLimit-Policy)
//   policy   token_bucket | fixed_window | sliding_window | no_limit
//   limit    token_bucket: the burst (bucket size); the windows: requests per interval
//   interval fixed_window, sliding_window: the window, in PHP's relative format ('1 minute')
//   rate     token_bucket: ['interval' => '1 minute', 'amount' => 10] (default amount 1)
//
// token_bucket -> TOKEN_BUCKET amount interval BURST limit; fixed_window -> FIXED_WINDOW limit
// interval (the window starts at the first request, as Symfony's); sliding_window ->
// SLIDING_WINDOW limit interval (the weighted two-window counter, as Symfony's); no_limit ->
// Symfony's NoLimiter (nothing to ask).

namespace Rl\RateLimiter;

use Symfony\Component\OptionsResolver\Options;
use Symfony\Component\OptionsResolver\OptionsResolver;
use Symfony\Component\RateLimiter\LimiterInterface;
use Symfony\Component\RateLimiter\Policy\NoLimiter;
use Symfony\Component\RateLimiter\Util\TimeUtil;

final class RlRateLimiterFactory
{
    /** @var array<string, mixed> */
    private $config;
    /** @var Connection */
    private $connection;
    /** @var list<string> */
    private $limits;

    /**
     * @param array<string, mixed>                      $config Symfony's limiter options
     * @param \Redis|\Predis\ClientInterface|Connection $client connected to rl-server or to Redis with rl.so
     */
    public function __construct(array $config, $client)
    {
        $this->connection = Connection::of($client);
        $options = new OptionsResolver();
        self::configureOptions($options);
        $this->config = $options->resolve($config);
        $this->limits = self::limitWords($this->config);
    }

    public function create(?string $key = null): LimiterInterface
    {
        if ($this->config['policy'] === 'no_limit') {
            return new NoLimiter();
        }

        return new RlLimiter($this->connection, $this->config['id'], $key ?? '', $this->limits);
    }

    /** @return list<string> the contract's limit words for this configuration */
    public function getLimitWords(): array
    {
        return $this->limits;
    }

    /**
     * @param array<string, mixed> $c
     *
     * @return list<string>
     */
    private static function limitWords(array $c): array
    {
        switch ($c['policy']) {
            case 'token_bucket':
                if (!isset($c['limit'], $c['rate'])) {
                    throw new \LogicException('token_bucket needs "limit" (the burst) and "rate" (["interval" => ..., "amount" => ...]).');
                }

                return ['TOKEN_BUCKET', (string) $c['rate']['amount'], self::duration($c['rate']['interval']),
                        'BURST', (string) $c['limit']];
            case 'fixed_window':
            case 'sliding_window':
                if (!isset($c['limit'], $c['interval'])) {
                    throw new \LogicException(sprintf('%s needs "limit" and "interval".', $c['policy']));
                }

                return [$c['policy'] === 'fixed_window' ? 'FIXED_WINDOW' : 'SLIDING_WINDOW', (string) $c['limit'],
                        self::duration($c['interval'])];
            default:
                return [];
        }
    }

    /** A DateInterval as a contract duration: whole seconds, as Symfony reads intervals. */
    private static function duration(\DateInterval $interval): string
    {
        return TimeUtil::dateIntervalToSeconds($interval) . 's';
    }

    /** Symfony's RateLimiterFactory options, the same names, types and normalisation. */
    private static function configureOptions(OptionsResolver $options): void
    {
        $intervalNormalizer = static function (Options $options, string $interval): \DateInterval {
            $now = \DateTimeImmutable::createFromFormat('U', (string) time());
            $nowPlusInterval = @$now->modify('+' . $interval);
            if (!$nowPlusInterval) {
                throw new \LogicException(sprintf('Cannot parse interval "%s", please use a valid unit as described on https://www.php.net/datetime.formats.relative.', $interval));
            }

            return $now->diff($nowPlusInterval);
        };
        $options
            ->define('id')->required()->allowedTypes('string')
            ->define('policy')->required()
                ->allowedValues('token_bucket', 'fixed_window', 'sliding_window', 'no_limit')
            ->define('limit')->allowedTypes('int')
            ->define('interval')->allowedTypes('string')->normalize($intervalNormalizer)
            ->define('rate')
                ->default(function (OptionsResolver $rate) use ($intervalNormalizer) {
                    $rate
                        ->define('amount')->allowedTypes('int')->default(1)
                        ->define('interval')->allowedTypes('string')->normalize($intervalNormalizer);
                })
                ->normalize(function (Options $options, $value) {
                    return isset($value['interval']) ? $value : null;
                });
    }
}
