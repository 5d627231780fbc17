"""kit.py selftest --plan N: groups that split a whole selftest evenly over N parts."""

from __future__ import annotations

import unittest

from kitgrade import selftest

from .support import make_lab


class PlanTest(unittest.TestCase):
    def setUp(self) -> None:
        self.labs = [make_lab(lab) for lab in ("01_alpha", "02_beta", "04_delta")]
        # 04 is the table's lab 04 (18 s a submission): its 24 do not fit one part of four.
        self.subs = {"01_alpha": [f"a{i}" for i in range(5)], "02_beta": ["b0"],
                     "04_delta": [f"d{i}" for i in range(24)]}

    def groups(self, gpus: int) -> list[tuple[list[str], list[str]]]:
        out = []
        for group in selftest.plan(self.labs, self.subs, gpus):
            labs, _, names = group.partition(" --wrong ")
            out.append((labs.split(), names.split()))
        return out

    def test_one_gpu_grades_everything_in_one_group(self) -> None:
        self.assertEqual(selftest.plan(self.labs, self.subs, 1), ["01 02 04"])

    def test_every_submission_once_and_a_long_lab_split(self) -> None:
        groups = self.groups(4)
        names = [n for _, chunk in groups for n in chunk]
        self.assertEqual(sorted(names), sorted(n for subs in self.subs.values() for n in subs))
        with_04 = [labs for labs, _ in groups if "04" in labs]
        self.assertGreater(len(with_04), 1)
        self.assertLessEqual(len(groups), 4)

    def test_parts_of_about_equal_length(self) -> None:
        cost = {"01": (15, 4.6), "02": (30, 13.0), "04": (75, 18.0)}
        loads = []
        for i, (labs, names) in enumerate(self.groups(3)):
            seconds = selftest.PLAN_SHARED_SECONDS if i == 0 else 0
            for lab in labs:
                fixed, each = cost[lab]
                mine = [n for n in names if n[0] == {"01": "a", "02": "b", "04": "d"}[lab]]
                seconds += fixed + each * len(mine)
            loads.append(seconds)
        self.assertLess(max(loads), 1.35 * sum(loads) / len(loads), loads)


if __name__ == "__main__":
    unittest.main()
