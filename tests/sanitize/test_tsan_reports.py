"""tsan_reports.py fails a ThreadSanitizer run on a report with a frame of ours and only there:
TFLite's uninstrumented Eigen pool makes reports that are not races, and those must not hide
ours. The logs are written here in TSan's format (the band runner's race of 34dd7e8's parent
was reported as below)."""
import importlib.util
import pathlib

HERE = pathlib.Path(__file__).resolve().parent
spec = importlib.util.spec_from_file_location("tsan_reports", HERE / "tsan_reports.py")
tsan_reports = importlib.util.module_from_spec(spec)
spec.loader.exec_module(tsan_reports)

FENCE = "=================="
EIGEN = f"""{FENCE}
WARNING: ThreadSanitizer: data race (pid=1)
  Write of size 8 at 0x7b0c000031b0 by thread T4:
    #0 operator delete(void*, unsigned long) tsan_new_delete.cpp:150 (libtsan.so+0x86c3d)
    #1 EigenForTFLite::TensorEvaluator<...>::enqueue_packing_helper(long) <null> (_pywrap_tensorflow_interpreter_wrapper.so+0x19e366)

SUMMARY: ThreadSanitizer: data race tsan_new_delete.cpp:150 in operator delete(void*, unsigned long)
{FENCE}
"""
OURS = f"""{FENCE}
WARNING: ThreadSanitizer: data race (pid=1)
  Write of size 4 at 0x7b8000012340 by thread T1:
    #0 fx_im2col_rows flexdelegate/native/conv/im2col.c:28 (_native_ext.abi3.so+0xa3a10)
    #1 fx_conv_gemm_rows flexdelegate/native/conv/im2col.c:80 (_native_ext.abi3.so+0xa3de5)

  Previous write of size 4 at 0x7b8000012340 by main thread:
    #0 fx_im2col_rows flexdelegate/native/conv/im2col.c:28 (_native_ext.abi3.so+0xa3a10)

SUMMARY: ThreadSanitizer: data race flexdelegate/native/conv/im2col.c:28 in fx_im2col_rows
{FENCE}
ThreadSanitizer: reported 1 warnings
"""


def test_reports_only_in_tflite_pass(tmp_path):
    (tmp_path / "tsan.101").write_text(EIGEN + EIGEN)
    ours, others = tsan_reports.judge(tmp_path)
    assert ours == [] and sum(others.values()) == 2
    assert tsan_reports.main(["tsan_reports.py", str(tmp_path)]) == 0


def test_a_report_in_our_code_fails_among_tflite_ones(tmp_path, capsys):
    (tmp_path / "tsan.101").write_text(EIGEN)
    (tmp_path / "tsan.102").write_text(EIGEN + OURS)
    ours, others = tsan_reports.judge(tmp_path)
    assert [name for name, _ in ours] == ["tsan.102"] and sum(others.values()) == 2
    assert tsan_reports.main(["tsan_reports.py", str(tmp_path)]) == 1
    assert "conv/im2col.c:28" in capsys.readouterr().out


def test_no_logs_no_reports(tmp_path):
    assert tsan_reports.main(["tsan_reports.py", str(tmp_path)]) == 0
