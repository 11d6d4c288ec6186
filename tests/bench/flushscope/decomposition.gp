# The flush-scope benchmark's time decomposition (report.py writes
# decomposition.dat and runs this in the results directory):
#   gnuplot -e "width=1600; ymax=30" decomposition.gp
# Block 0 of decomposition.dat: x, workload CPU, + daemon CPU, + flush,
# + rest (cumulative, s per workspace, means), completion time, arm.
# Block 1: the N group labels. The parts overlap in time (the daemon and
# the committer run beside the workload), so a stack can reach above its
# completion-time dot; "rest" is then 0.
if (!exists("width")) width = 1600
if (!exists("ymax")) ymax = 0
set terminal pngcairo size width,720 font ",10"
set output 'decomposition.png'
set title "Where a workspace's time goes, per arm and N (means per workspace; dot: completion time)"
set ylabel "seconds per workspace"
set style fill solid 0.9 border rgb "#444444"
set boxwidth 0.8
set xtics rotate by -60 left nomirror font ",8"
set xtics scale 0
set grid ytics
set key outside right top
set bmargin 9
if (ymax > 0) set yrange [0:ymax]; else set yrange [0:*]
set offsets 0.8, 0.8, 0, 0
plot 'decomposition.dat' index 0 using 1:5:xtic(7) with boxes lc rgb "#c7c7c7" title "rest (waiting)", \
     '' index 0 using 1:4 with boxes lc rgb "#d62728" title "flush (syncfs / fsync)", \
     '' index 0 using 1:3 with boxes lc rgb "#1f77b4" title "daemon CPU", \
     '' index 0 using 1:2 with boxes lc rgb "#2ca02c" title "workload CPU", \
     '' index 0 using 1:6 with points pt 7 ps 0.9 lc rgb "black" title "completion time", \
     '' index 1 using 1:2:3 with labels font ",11" notitle
