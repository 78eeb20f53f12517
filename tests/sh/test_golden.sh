#!/usr/bin/env bash
# tests/sh/test_golden.sh - the lesson transcripts: every lesson, both languages, replayed in batch mode
# and compared with tests/golden/ (see tests/golden.sh).
exec "$(dirname "$0")/../golden.sh" "${MHA_BUILD:?set MHA_BUILD to a build directory}"
