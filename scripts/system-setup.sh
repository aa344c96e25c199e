#!/usr/bin/env bash
# Installs what the tests need from Debian where it is missing and starts dockerd.
set -euo pipefail

need=()
command -v dockerd >/dev/null || need+=(docker.io)
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v debootstrap >/dev/null || need+=(debootstrap)
command -v tmux >/dev/null || need+=(tmux)
if ((${#need[@]})); then
  if [[ $(id -u) -ne 0 ]]; then
    echo "missing system packages: ${need[*]} (install them as root: apt-get install ${need[*]})" >&2
    exit 1
  fi
  echo "installing ${need[*]} ..."
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! docker info >/dev/null 2>&1; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "dockerd is not running and only root can start it here" >&2
    exit 1
  fi
  echo "starting dockerd ..."
  nohup dockerd >/tmp/mlagent-dockerd.log 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not start; see /tmp/mlagent-dockerd.log" >&2; exit 1; }
fi
