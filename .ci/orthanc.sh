#!/usr/bin/env bash
# A PACS on loopback for amid predict's PACS tests (amid/host/dicomweb, amid/app/cli):
# Debian's Orthanc with its DICOMweb plugin, under its own storage, index and log folder and
# on its own ports, with a test user, so that it disturbs no other Orthanc on the machine
# (the Debian service is never started) and leaves nothing behind when stopped.
#
#   .ci/orthanc.sh start    write the configuration, start Orthanc, wait until it answers
#   .ci/orthanc.sh stop     stop the Orthanc this script started (by its pid file)
#   .ci/orthanc.sh env      print the environment the tests read (AMID_TEST_PACS=...)
#
# AMID_ORTHANC_DIR (default /tmp/amid-orthanc) holds everything; AMID_ORTHANC_PORT (default
# 18042) is the HTTP port (DICOMweb under /dicom-web/) and the next one the DICOM port
# (AE title AMIDPACS), where storescu loads studies as a modality does.
set -euo pipefail

DIR=${AMID_ORTHANC_DIR:-/tmp/amid-orthanc}
PORT=${AMID_ORTHANC_PORT:-18042}
DPORT=$((PORT + 1))
USER_NAME=amid
PASSWORD=amid-test-only
PLUGIN=/usr/share/orthanc/plugins/libOrthancDicomWeb.so

say() { echo "orthanc.sh: $*" >&2; }

envs() {
	echo "AMID_TEST_PACS=http://127.0.0.1:$PORT/dicom-web/"
	echo "AMID_TEST_PACS_USER=$USER_NAME"
	echo "AMID_TEST_PACS_PASSWORD=$PASSWORD"
	echo "AMID_TEST_PACS_DICOM=127.0.0.1:$DPORT:AMIDPACS"
}

start() {
	for f in /usr/sbin/Orthanc "$PLUGIN"; do
		[ -e "$f" ] || { say "$f is missing: install orthanc and orthanc-dicomweb (make deps)"; exit 1; }
	done
	stop 2>/dev/null || true
	rm -rf "$DIR"
	mkdir -p "$DIR/storage" "$DIR/index"
	cat >"$DIR/orthanc.json" <<JSON
{
  "Name": "AMID test PACS",
  "StorageDirectory": "$DIR/storage",
  "IndexDirectory": "$DIR/index",
  "HttpPort": $PORT,
  "DicomPort": $DPORT,
  "DicomAet": "AMIDPACS",
  "RemoteAccessAllowed": false,
  "AuthenticationEnabled": true,
  "RegisteredUsers": {"$USER_NAME": "$PASSWORD"},
  "DicomCheckCalledAet": false,
  "UnknownSopClassAccepted": true,
  "StableAge": 1,
  "Plugins": ["$PLUGIN"],
  "DicomWeb": {"Enable": true, "Root": "/dicom-web/", "EnableWado": true, "WadoRoot": "/wado", "Host": "127.0.0.1", "Ssl": false}
}
JSON
	/usr/sbin/Orthanc "$DIR/orthanc.json" >"$DIR/orthanc.log" 2>&1 &
	echo $! >"$DIR/orthanc.pid"
	for _ in $(seq 1 100); do
		if curl -sf -u "$USER_NAME:$PASSWORD" "http://127.0.0.1:$PORT/system" >/dev/null 2>&1; then
			say "Orthanc answers on 127.0.0.1:$PORT (DICOM $DPORT)"
			return 0
		fi
		if ! kill -0 "$(cat "$DIR/orthanc.pid")" 2>/dev/null; then
			say "Orthanc exited; its log:"; tail -20 "$DIR/orthanc.log" >&2; exit 1
		fi
		sleep 0.2
	done
	say "Orthanc did not answer in 20 s; its log:"; tail -20 "$DIR/orthanc.log" >&2
	exit 1
}

stop() {
	[ -f "$DIR/orthanc.pid" ] || return 0
	pid=$(cat "$DIR/orthanc.pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$pid" 2>/dev/null || true
	rm -rf "$DIR"
}

case "${1:-}" in
start) start ;;
stop) stop ;;
env) envs ;;
*) echo "usage: $0 start|stop|env" >&2; exit 2 ;;
esac
