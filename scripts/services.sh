#!/usr/bin/env bash
# Make sure PostgreSQL and Redis answer on 127.0.0.1 for tests and local runs.
#
# Order for PostgreSQL: use a server that already answers; else start the
# Debian cluster (postgresql package); else initdb + start a private, disposable
# cluster under $AGENTPLANE_SERVICES_DIR/pg (trust auth, superuser "postgres").
# Redis: use one that answers; else start a throwaway, non-persistent server.
#
# Idempotent and quiet: prints one status line per service. Exits non-zero,
# naming what to install, when a service cannot be brought up.
#
# Environment:
#   AGENTPLANE_SERVICES_DIR  scratch dir for private instances (/tmp/agentplane-services)
#   AGENTPLANE_PG_PORT       PostgreSQL port (5432); overridable for testing this script
#   AGENTPLANE_REDIS_PORT    Redis port (6379)
set -uo pipefail # no -e: probes are expected to fail

HOST=127.0.0.1
PG_PORT=${AGENTPLANE_PG_PORT:-5432}
REDIS_PORT=${AGENTPLANE_REDIS_PORT:-6379}
DIR=${AGENTPLANE_SERVICES_DIR:-/tmp/agentplane-services}
TIMEOUT=30 # seconds to wait for each service to answer

die() {
	echo "services: $*" >&2
	exit 1
}

# wait_for CMD...: poll CMD until it succeeds or TIMEOUT elapses.
wait_for() {
	local end=$((SECONDS + TIMEOUT))
	until "$@"; do
		((SECONDS >= end)) && return 1
		sleep 0.5
	done
}

# pg_bin NAME: a PostgreSQL program from PATH, else the newest
# /usr/lib/postgresql/<ver>/bin (Debian does not put server tools on PATH).
pg_bin() {
	command -v "$1" 2>/dev/null && return
	# shellcheck disable=SC2012 # version dirs are plain numbers
	ls -d /usr/lib/postgresql/*/bin/"$1" 2>/dev/null | sort -V | tail -n 1 | grep .
}

# as_pg CMD...: run CMD as the postgres OS user when we are root, because
# initdb and postgres refuse to run as root.
as_pg() {
	if [ "$(id -u)" = 0 ]; then
		runuser -u postgres -- "$@"
	else
		"$@"
	fi
}

# ---------------------------------------------------------------- PostgreSQL

PG_ISREADY=$(pg_bin pg_isready) ||
	die "postgres: pg_isready not found; install it: apt-get install postgresql-client (or postgresql)"

pg_up() { "$PG_ISREADY" -q -h "$HOST" -p "$PG_PORT"; }

# pg_isready exits 1 while the server is starting up: wait instead of
# starting a second one.
pg_state() {
	"$PG_ISREADY" -q -h "$HOST" -p "$PG_PORT"
	echo $?
}

start_debian_cluster() {
	local ver
	# shellcheck disable=SC2012 # version dirs are plain numbers
	ver=$(ls /etc/postgresql 2>/dev/null | head -n 1)
	[ -n "$ver" ] && command -v pg_ctlcluster >/dev/null || return 1
	# pg_ctlcluster waits for startup itself, so on success a short grace
	# period is enough; on failure (broken, or already running on another
	# port) fall through to the private cluster at once.
	local TIMEOUT=5
	pg_ctlcluster --skip-systemctl-redirect "$ver" main start >/dev/null 2>&1 || TIMEOUT=0
	wait_for pg_up && echo "postgres: up (started Debian cluster $ver/main)"
}

start_private_cluster() {
	local initdb pg_ctl pgdir="$DIR/pg" data="$DIR/pg/data"
	if ! initdb=$(pg_bin initdb) || ! pg_ctl=$(pg_bin pg_ctl); then
		die "postgres: not running and no server binaries (initdb, pg_ctl) found; install: apt-get install postgresql"
	fi

	# 755: the postgres user must be able to traverse it (only set on creation,
	# never on a pre-existing dir such as /tmp).
	# shellcheck disable=SC2174 # only the leaf needs the mode
	[ -d "$DIR" ] || mkdir -p -m 755 "$DIR" || die "postgres: cannot create $DIR"
	mkdir -p "$pgdir" || die "postgres: cannot create $pgdir"
	if [ "$(id -u)" = 0 ]; then
		id -u postgres >/dev/null 2>&1 ||
			useradd --system --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin postgres ||
			die "postgres: cannot create the postgres OS user"
		chown -R postgres: "$pgdir"
		as_pg test -w "$pgdir" ||
			die "postgres: the postgres user cannot reach $pgdir; make its parent dirs world-executable or set AGENTPLANE_SERVICES_DIR"
	fi

	# The cluster is disposable: re-create it if it was made by another major version.
	local want
	want=$("$initdb" --version | awk '{print $3}' | cut -d. -f1) # "initdb (PostgreSQL) 15.20 ..."
	if [ -f "$data/PG_VERSION" ] && [ "$(cat "$data/PG_VERSION")" != "$want" ]; then
		echo "postgres: $data is from PostgreSQL $(cat "$data/PG_VERSION"), re-creating for $want" >&2
		rm -rf "$data"
	fi

	if [ ! -f "$data/PG_VERSION" ]; then
		# cd: initdb warns when it cannot read the caller's cwd (e.g. /root).
		(cd "$pgdir" && as_pg "$initdb" -D "$data" -U postgres --auth=trust \
			--encoding=UTF8 --locale=C >"$pgdir/initdb.log" 2>&1) || {
			tail -n 20 "$pgdir/initdb.log" >&2
			die "postgres: initdb failed (log: $pgdir/initdb.log)"
		}
		# Listen only on loopback; keep the socket in our dir because
		# /var/run/postgresql may not exist. Durability is pointless for a
		# scratch cluster, so trade it for test speed.
		cat >>"$data/postgresql.conf" <<-EOF

			# added by scripts/services.sh
			listen_addresses = '$HOST'
			port = $PG_PORT
			unix_socket_directories = '$pgdir'
			fsync = off
			synchronous_commit = off
			full_page_writes = off
		EOF
	fi

	(cd "$pgdir" && as_pg "$pg_ctl" -D "$data" -l "$pgdir/postgres.log" -w -t "$TIMEOUT" start >/dev/null 2>&1)
	wait_for pg_up || {
		tail -n 20 "$pgdir/postgres.log" >&2
		die "postgres: private cluster in $data did not answer on $HOST:$PG_PORT within ${TIMEOUT}s (log: $pgdir/postgres.log)"
	}
	echo "postgres: up (started private cluster in $data)"
}

case $(pg_state) in
0) echo "postgres: up (existing)" ;;
1)
	wait_for pg_up || die "postgres: server on $HOST:$PG_PORT keeps rejecting connections"
	echo "postgres: up (existing, was starting)"
	;;
*) start_debian_cluster || start_private_cluster ;;
esac

# --------------------------------------------------------------------- Redis

redis_up() {
	if command -v redis-cli >/dev/null; then
		[ "$(redis-cli -h "$HOST" -p "$REDIS_PORT" ping 2>/dev/null)" = PONG ]
	else
		# No client installed: speak the protocol over bash's /dev/tcp.
		(
			exec 3<>"/dev/tcp/$HOST/$REDIS_PORT" || exit 1
			printf 'PING\r\n' >&3
			IFS= read -r -t 2 reply <&3 && [ "${reply%$'\r'}" = +PONG ]
		) 2>/dev/null
	fi
}

if redis_up; then
	echo "redis: up (existing)"
else
	command -v redis-server >/dev/null ||
		die "redis: not running and redis-server not found; install: apt-get install redis-server"
	rdir="$DIR/redis"
	mkdir -p "$rdir" || die "redis: cannot create $rdir"
	# No persistence: it is a scratch instance for tests.
	redis-server --daemonize yes --bind "$HOST" --port "$REDIS_PORT" \
		--save "" --appendonly no --dir "$rdir" --logfile "$rdir/redis.log" \
		--pidfile "$rdir/redis.pid" >/dev/null 2>&1
	wait_for redis_up || {
		tail -n 20 "$rdir/redis.log" >&2 2>/dev/null
		die "redis: did not answer on $HOST:$REDIS_PORT within ${TIMEOUT}s (log: $rdir/redis.log)"
	}
	echo "redis: up (started in $rdir)"
fi
