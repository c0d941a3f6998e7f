#!/usr/bin/env bash
# phpredis (rawCommand, pconnect + ECHO, multi/watch) and Predis (executeRaw, transaction)
# against rl-server.
set -euo pipefail
command -v php >/dev/null || { echo "php not installed"; exit 77; }
# extension_loaded, not `php -m | grep -q`: grep exits at the match, php may die of SIGPIPE and
# pipefail would then report php-redis as missing.
php -r 'exit(extension_loaded("redis") ? 0 : 1);' || { echo "php-redis not installed"; exit 77; }
php -r '
$port = (int)getenv("RL_PORT");
$r = new Redis();
if (!$r->pconnect("127.0.0.1", $port, 2.0)) { fwrite(STDERR, "pconnect failed\n"); exit(1); }
if ($r->echo("hello") !== "hello") { fwrite(STDERR, "ECHO\n"); exit(1); }
$ok = 0;
for ($i = 0; $i < 8; $i++) {
  $reply = $r->rawCommand("RL.CHECK", "php:seed", "GCRA", "5", "1s");
  if ($reply[0] === 1) $ok++;
  else if ($reply[3] <= 0) { fwrite(STDERR, "denied without retry-after\n"); exit(1); }
}
if ($ok !== 5) { fwrite(STDERR, "phpredis: $ok allowed\n"); exit(1); }
$cell = $r->rawCommand("CL.THROTTLE", "php:user123", "15", "30", "60");
if ($cell !== [0, 16, 15, -1, 2]) { fwrite(STDERR, "CL.THROTTLE " . json_encode($cell) . "\n"); exit(1); }
echo "phpredis ok\n";
'
# phpredis multi(): MULTI ... EXEC, and a WATCH race with a second connection (exec() is false).
php -r '
$port = (int)getenv("RL_PORT");
$r = new Redis();
$other = new Redis();
if (!$r->connect("127.0.0.1", $port, 2.0) || !$other->connect("127.0.0.1", $port, 2.0)) {
  fwrite(STDERR, "connect failed\n"); exit(1);
}
$r->multi();
for ($i = 0; $i < 3; $i++) $r->rawCommand("RL.CHECK", "php:txn", "TOKEN_BUCKET", "2", "1m");
$out = $r->exec();
if (!is_array($out) || array_column($out, 0) !== [1, 1, 0]) {
  fwrite(STDERR, "phpredis multi: " . json_encode($out) . "\n"); exit(1);
}
$r->watch("php:watch");
$other->rawCommand("RL.CHECK", "php:watch", "TOKEN_BUCKET", "2", "1h");
$r->multi();
$r->rawCommand("RL.CHECK", "php:watch", "TOKEN_BUCKET", "2", "1h");
if ($r->exec() !== false) { fwrite(STDERR, "phpredis: EXEC ran after a watched change\n"); exit(1); }
$r->watch("php:watch");
$r->multi();
$r->rawCommand("RL.CHECK", "php:watch", "TOKEN_BUCKET", "2", "1h");
$out = $r->exec();
if (!is_array($out) || $out[0][0] !== 1) { fwrite(STDERR, "phpredis watch: " . json_encode($out) . "\n"); exit(1); }
echo "phpredis multi ok\n";
'
if [ -f /usr/share/php/Predis/autoload.php ] || php -r 'exit(stream_resolve_include_path("Predis/autoload.php") ? 0 : 1);'; then
  php -r '
require "Predis/autoload.php";
$c = new Predis\Client(["host" => "127.0.0.1", "port" => (int)getenv("RL_PORT"), "read_write_timeout" => 2]);
$ok = 0;
for ($i = 0; $i < 8; $i++) {
  $reply = $c->executeRaw(["RL.CHECK", "predis:seed", "FIXED_WINDOW", "5", "1s"]);
  if (!is_array($reply)) { fwrite(STDERR, "Predis error: " . json_encode($reply) . "\n"); exit(1); }
  if ($reply[0] === 1) $ok++;
}
if ($ok !== 5) { fwrite(STDERR, "Predis: $ok allowed\n"); exit(1); }
$err = $c->executeRaw(["RL.CHECK", "predis:k", "GCRA", "5", "1s", "COST", "-1"], $error);
if (!$error) { fwrite(STDERR, "Predis: no error flagged\n"); exit(1); }
if ($c->executeRaw(["PING"]) != "PONG") { fwrite(STDERR, "Predis PING\n"); exit(1); }
// transaction(): MULTI ... EXEC; with WATCH (cas), a change by another client aborts it.
$raw = function (...$args) { return Predis\Command\RawCommand::create(...$args); };
$out = $c->transaction(function ($tx) use ($raw) {
  for ($i = 0; $i < 3; $i++) $tx->executeCommand($raw("RL.CHECK", "predis:txn", "GCRA", "2", "1m"));
});
if (array_column($out, 0) !== [1, 1, 0]) { fwrite(STDERR, "Predis transaction: " . json_encode($out) . "\n"); exit(1); }
$other = new Predis\Client(["host" => "127.0.0.1", "port" => (int)getenv("RL_PORT")]);
try {
  $c->transaction(["watch" => "predis:watch", "cas" => true, "retry" => 0],
    function ($tx) use ($raw, $other) {
      $tx->executeCommand($raw("RL.PEEK", "predis:watch", "GCRA", "2", "1h"));  // read, WATCHed
      $other->executeRaw(["RL.CHECK", "predis:watch", "GCRA", "2", "1h"]);
      $tx->multi();
      $tx->executeCommand($raw("RL.CHECK", "predis:watch", "GCRA", "2", "1h"));
    });
  fwrite(STDERR, "Predis: EXEC ran after a watched change\n"); exit(1);
} catch (Predis\Transaction\AbortedMultiExecException $e) {
}
echo "Predis ok\n";
'
else
  echo "Predis not installed: skipped"
fi
