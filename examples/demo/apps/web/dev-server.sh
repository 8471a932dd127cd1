# A stand-in for a dev server (vite, next dev): a line a second until it is stopped.
# `vx run web#dev -- --port 4000` forwards the port, as it would to vite.
port=5173
if [ "$1" = "--port" ] && [ -n "$2" ]; then port=$2; fi
i=0
while :; do
  i=$((i + 1))
  echo "web: dev server on http://localhost:$port (tick $i)"
  sleep 1
done
