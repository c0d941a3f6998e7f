# Chart for bench/run: requests per second of rl-server and of rl.so inside redis-server vs
# Redis 7 + Lua per workload, one panel per pipeline depth, and the server CPU per request (less
# sensitive to a busy machine than rps). bench/run passes datafile, outfile and charttitle with
# -e; the data file has one row per workload: "label" redis_p1 rl_p1 module_p1 redis_p16 rl_p16
# module_p16 (thousand requests/s) redis_cpu16 rl_cpu16 module_cpu16 (server CPU µs per request
# at -P 16); "-" = not measured.
# (-e "png=1" draws a PNG instead, for viewers without SVG.)
if (exists("png")) {
  set terminal pngcairo size 1100,1180 font "sans,10" background rgb "white"
} else {
  set terminal svg size 1100,1180 dynamic font "sans,12" background rgb "white"
}
set output outfile
set datafile missing "-"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.85 border -1
set boxwidth 0.9
set grid ytics lc rgb "#dddddd"
set key top left horizontal
# (room above the tallest bar for the key)
set offsets 0, 0, graph 0.18, 0
set ylabel "thousand requests / s"
set xtics rotate by -20 scale 0 font "sans,11"
set rmargin 12
set yrange [0:*]
set multiplot layout 3,1 title charttitle font "sans,14"
redis = "redis-server (Lua via EVALSHA; PING, INCR native)"
set title "-P 1 (one request per round trip), 50 clients"
plot datafile using 2:xtic(1) title redis lc rgb "#c0392b", \
     '' using 3 title "rl-server" lc rgb "#2471a3", \
     '' using 4 title "rl.so in redis-server" lc rgb "#27ae60"
set title "-P 16 (16 pipelined requests per round trip), 50 clients"
plot datafile using 5:xtic(1) title redis lc rgb "#c0392b", \
     '' using 6 title "rl-server" lc rgb "#2471a3", \
     '' using 7 title "rl.so in redis-server" lc rgb "#27ae60"
set title "server CPU per request at -P 16 (lower is better)"
set ylabel "µs of server CPU / request"
plot datafile using 8:xtic(1) title redis lc rgb "#c0392b", \
     '' using 9 title "rl-server" lc rgb "#2471a3", \
     '' using 10 title "rl.so in redis-server" lc rgb "#27ae60"
unset multiplot
