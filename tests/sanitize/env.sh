# Source this to run the suite, a script or a fuzzer against a sanitizer build
# (FLEXDELEGATE_SANITIZE=address,undefined): `source tests/sanitize/env.sh [leaks]`; against a
# FLEXDELEGATE_SANITIZE=thread build: `source tests/sanitize/env.sh thread LOGDIR` (below).
# The extension is instrumented but python is not, so the ASan runtime must be loaded first
# (LD_PRELOAD); libstdc++ too, or ASan's __cxa_throw interceptor aborts inside TFLite's C++.
# halt_on_error: the first report kills the process, so a report always fails what ran it.
# With "leaks": LeakSanitizer too, with the suppressions of tests/sanitize/lsan.supp.
_fx_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
_fx_cc=${CC:-gcc}
export LD_PRELOAD="$($_fx_cc -print-file-name=libasan.so) $($_fx_cc -print-file-name=libstdc++.so)"
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:abort_on_error=0:allocator_may_return_null=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
export LSAN_OPTIONS="suppressions=$_fx_here/lsan.supp:print_suppressions=1"
if [ "${1:-}" = leaks ]; then
  export ASAN_OPTIONS="${ASAN_OPTIONS/detect_leaks=0/detect_leaks=1}"
fi
# ThreadSanitizer: TFLite's own kernels (Eigen's thread pool) are not instrumented, so TSan
# reports races inside them that are not races; the process neither stops nor fails on a report
# (exitcode=0), every report goes to LOGDIR, and tests/sanitize/tsan_reports.py LOGDIR fails on
# those with a frame of ours.
if [ "${1:-}" = thread ]; then
  export LD_PRELOAD="$($_fx_cc -print-file-name=libtsan.so) $($_fx_cc -print-file-name=libstdc++.so)"
  export TSAN_OPTIONS="halt_on_error=0:exitcode=0:report_signal_unsafe=0:history_size=4:log_path=${2:?LOGDIR}/tsan"
  unset ASAN_OPTIONS UBSAN_OPTIONS LSAN_OPTIONS
fi
unset _fx_here _fx_cc
