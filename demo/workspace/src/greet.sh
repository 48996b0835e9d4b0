#!/usr/bin/env bash
# Prints a greeting for the name given as the first argument.
echo "Hello, ${1:-world}"
