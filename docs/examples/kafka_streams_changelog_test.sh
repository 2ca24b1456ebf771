#!/usr/bin/env bash
# The test of docs/examples/kafka_streams_changelog.cpp: Kafka Streams writes
# a store's changelog over three partitions, then the example restores it in
# strata and compares it with the state the operations left.
#
# Usage: kafka_streams_changelog_test.sh EXAMPLE
#
# Needs STRATA_KAFKA_BOOTSTRAP (the broker) and STRATA_PEER_KAFKA_STREAMS
# (scripts/peer-kafka-streams.sh, which runs Kafka Streams); the project's
# test command exports both.
set -euo pipefail

if (($# != 1)); then
  echo "usage: $0 EXAMPLE" >&2
  exit 2
fi
readonly example="$1"
if [[ -z "${STRATA_KAFKA_BOOTSTRAP:-}" ]]; then
  echo "STRATA_KAFKA_BOOTSTRAP is not set: run scripts/test.sh, or start a broker and eval \"\$(scripts/kafka-broker.sh env)\"" >&2
  exit 1
fi
if [[ -z "${STRATA_PEER_KAFKA_STREAMS:-}" ]]; then
  echo "STRATA_PEER_KAFKA_STREAMS is not set: run scripts/test.sh, or export it as <repo>/scripts/peer-kafka-streams.sh" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/strata-ks-changelog.XXXXXX")"
trap 'rm -rf "${work}"' EXIT
readonly records="${work}/records.tsv"
# A new application id per run: the peer refuses topics that already exist.
readonly application_id="ks-changelog-example-$$-$(date +%s%N)"
readonly store=counts
readonly partitions=3

# A few thousand operations, fixed by the seed, on keys a partitioner or a
# serde could get wrong: the empty key (hashed, not spread like a null key),
# non-ASCII keys (hashed as UTF-8 bytes), a key with spaces, a long one.
# About one in seven is a delete; values cover the whole Long range.
RANDOM=7
awkward_keys=("" "grüße" "日本語-キー" "emoji-🙂" "key with spaces" "$(printf 'long-%.0s' {1..60})")
{
  printf '%s\t%s\n' "grüße" "-9223372036854775808"
  printf '%s\t%s\n' "" "9223372036854775807"
  for ((i = 0; i < 3000; i++)); do
    k=$((RANDOM % 300))
    if ((k < ${#awkward_keys[@]})); then key="${awkward_keys[k]}"; else key="key-${k}"; fi
    if ((RANDOM % 7 == 0)); then
      printf '%s\t\n' "${key}"
    else
      printf '%s\t%d\n' "${key}" $(((RANDOM << 49) ^ (RANDOM << 34) ^ (RANDOM << 19) ^ (RANDOM << 4) ^ (RANDOM % 16)))
    fi
  done
} >"${records}"
echo "records: $(wc -l <"${records}") operations in ${records}"

"${STRATA_PEER_KAFKA_STREAMS}" interop-write --application-id "${application_id}" --store "${store}" \
  --records "${records}" --partitions "${partitions}" --bootstrap "${STRATA_KAFKA_BOOTSTRAP}"

"${example}" --bootstrap "${STRATA_KAFKA_BOOTSTRAP}" --application-id "${application_id}" --store "${store}" \
  --partitions "${partitions}" --expect "${records}"
