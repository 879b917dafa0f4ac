#!/usr/bin/env python3
"""scripts/junit-summary.py must count every test that did not run as failed (unless it is on
its allow-list): a GoogleTest-style skip, a ctest "not run" (missing program, failed fixture)
and a disabled test. Runs a throw-away ctest project to get real JUnit files from this ctest."""
import importlib.util
import os
import subprocess
import sys
import tempfile
import textwrap
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
spec = importlib.util.spec_from_file_location("junit_summary",
                                              os.path.join(ROOT, "scripts", "junit-summary.py"))
js = importlib.util.module_from_spec(spec)
spec.loader.exec_module(js)

PROJECT = textwrap.dedent("""
    cmake_minimum_required(VERSION 3.20)
    project(skips NONE)
    enable_testing()
    set(PY "{py}")
    add_test(NAME passes COMMAND ${{PY}} -c "print('ok')")
    add_test(NAME fails COMMAND ${{PY}} -c "raise SystemExit(1)")
    # As gtest_discover_tests registers them: a GTEST_SKIP prints "[  SKIPPED ]".
    add_test(NAME Fixture.Skipped COMMAND ${{PY}} -c "print('[  SKIPPED ] no fixture')")
    set_tests_properties(Fixture.Skipped PROPERTIES SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")
    add_test(NAME skip_code COMMAND ${{PY}} -c "raise SystemExit(77)")
    set_tests_properties(skip_code PROPERTIES SKIP_RETURN_CODE 77)
    add_test(NAME missing_program COMMAND /nonexistent-program-for-junit-summary-test)
    add_test(NAME setup_fails COMMAND ${{PY}} -c "raise SystemExit(1)")
    set_tests_properties(setup_fails PROPERTIES FIXTURES_SETUP fx)
    add_test(NAME needs_fixture COMMAND ${{PY}} -c "print('ok')")
    set_tests_properties(needs_fixture PROPERTIES FIXTURES_REQUIRED fx)
    add_test(NAME off COMMAND ${{PY}} -c "print('ok')")
    set_tests_properties(off PROPERTIES DISABLED ON)
    add_test(NAME S3Integration.VirtualHostAddressing COMMAND ${{PY}} -c "print('[  SKIPPED ]')")
    set_tests_properties(S3Integration.VirtualHostAddressing PROPERTIES
      SKIP_REGULAR_EXPRESSION "\\\\[  SKIPPED \\\\]")
""")


class JunitSummary(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        src = os.path.join(cls.tmp.name, "src")
        build = os.path.join(cls.tmp.name, "build")
        os.makedirs(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write(PROJECT.format(py=sys.executable))
        subprocess.run(["cmake", "-S", src, "-B", build], check=True, capture_output=True)
        cls.xml = os.path.join(cls.tmp.name, "r.xml")
        subprocess.run(["ctest", "--output-junit", cls.xml], cwd=build, capture_output=True)
        cls.lines = []
        cls.result = js.summarize([cls.xml], out=cls.lines.append)

    @classmethod
    def tearDownClass(cls):
        cls.tmp.cleanup()

    def failed_names(self):
        return [l for l in self.lines if l.startswith("FAILED: ")]

    def test_totals(self):
        passed, failed, skipped = self.result
        # passes + needs_fixture's setup... : passes is the only pass.
        self.assertEqual(passed, 1, self.lines)
        # fails, setup_fails, Fixture.Skipped, skip_code, missing_program, needs_fixture, off
        self.assertEqual(failed, 7, self.lines)
        self.assertEqual(skipped, 1, self.lines)
        self.assertEqual(self.lines[-1], "1 passed, 7 failed")

    def test_every_kind_of_not_running_is_a_failure(self):
        text = "\n".join(self.failed_names())
        for name in ("Fixture.Skipped", "skip_code", "missing_program", "needs_fixture", "off"):
            self.assertIn("FAILED: " + name, text)

    def test_allow_list_names_its_reason(self):
        self.assertTrue(any(l.startswith("skipped (allowed: ") and
                            l.endswith("S3Integration.VirtualHostAddressing") for l in self.lines),
                        self.lines)

    def test_build_failures_and_unreadable_files_count(self):
        lines = []
        _, failed, _ = js.summarize([os.path.join(self.tmp.name, "absent.xml")], 2, lines.append)
        self.assertEqual(failed, 3)
        self.assertEqual(lines[-1], "0 passed, 3 failed")


if __name__ == "__main__":
    unittest.main()
