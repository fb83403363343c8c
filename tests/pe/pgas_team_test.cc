#include <vector>

#include "base/cpu.h"
#include "pe_main.h"
#include "placement_check.h"
#include "pgas/team.h"
#include "sync/wait.h"

namespace {
int me() { return shmem_my_pe(); }
int npes() { return shmem_n_pes(); }

long counter_word;  // a global: symmetric

TEST(Team, WorldAndShared) {
  EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_WORLD), me());
  EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_WORLD), npes());
  // The shared team is the PEs whose memory this PE can address: those of its host.
  int local = 0;
  for (int pe = 0; pe < npes(); ++pe) {
    const int in_shared = shmem_team_translate_pe(SHMEM_TEAM_WORLD, pe, SHMEM_TEAM_SHARED);
    EXPECT_EQ(in_shared >= 0, shmem_ptr(&counter_word, pe) != nullptr) << "PE " << pe;
    if (in_shared >= 0) {
      EXPECT_EQ(in_shared, local++);
    }
  }
  EXPECT_EQ(shmem_team_n_pes(SHMEM_TEAM_SHARED), local);
  EXPECT_GE(shmem_team_my_pe(SHMEM_TEAM_SHARED), 0);
  EXPECT_EQ(shmem_team_my_pe(SHMEM_TEAM_INVALID), -1);
  EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, npes(), SHMEM_TEAM_SHARED), -1);
  shmem_team_config_t cfg{};
  EXPECT_EQ(shmem_team_get_config(SHMEM_TEAM_WORLD, SHMEM_TEAM_NUM_CONTEXTS, &cfg), 0);
  EXPECT_EQ(shmem_team_sync(SHMEM_TEAM_WORLD), 0);
  EXPECT_EQ(shmem_team_sync(SHMEM_TEAM_SHARED), 0);
}

// With more PEs than CPUs and every PE bound to one CPU (tessera-run's layout at 4 PEs on 2 CPUs), a
// barrier waits for the members of its own CPU first: each team learns them from the CPUs the PEs
// published at start-up. Checked against the CPUs the PEs report here (the ones they were started on, which
// they still run on unless tessera-run has unbound the job since), and barriers still hold everyone.
TEST(Team, BarrierWaitsForMembersOfMyCpuFirst) {
  static int cpu[64];
  static int round_of[64];
  ASSERT_LE(npes(), 64);
  const int mine = checked_start_cpu();
  for (int p = 0; p < npes(); ++p) shmem_int_p(&cpu[me()], mine, p);
  shmem_barrier_all();
  shmem_barrier_all();  // the world team has learned the CPUs by now
  std::vector<int> want;
  // A world team that spans hosts runs the dissemination barrier, which learns no CPUs.
  const bool learns = !tessera::pgas::team_world()->spans_hosts;
  if (learns && tessera::sync::oversubscribed() && mine >= 0)
    for (int p = 0; p < npes(); ++p)
      if (p != me() && cpu[p] == mine) want.push_back(p);
  EXPECT_EQ(tessera::pgas::team_world()->same_cpu, want);
  EXPECT_EQ(tessera::pgas::team_world()->unbound_here, learns && tessera::sync::oversubscribed() && mine < 0);
  for (int round = 1; round <= 300; ++round) {
    for (int p = 0; p < npes(); ++p) shmem_int_p(&round_of[me()], round, p);
    shmem_barrier_all();
    for (int p = 0; p < npes(); ++p) ASSERT_EQ(round_of[p], round) << "PE " << p << " after barrier " << round;
    shmem_barrier_all();
  }
}

TEST(Team, SplitStridedEvenAndOdd) {
  shmem_team_t even, odd;
  int neven = (npes() + 1) / 2, nodd = npes() / 2;
  shmem_team_config_t cfg{3};
  long* count = static_cast<long*>(shmem_calloc(1, sizeof(long)));  // at PE 0, bumped by the even PEs
  ASSERT_TRUE(count);
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, neven, &cfg, SHMEM_TEAM_NUM_CONTEXTS, &even), 0);
  if (me() % 2 == 0) {
    ASSERT_NE(even, SHMEM_TEAM_INVALID);
    EXPECT_EQ(shmem_team_my_pe(even), me() / 2);
    EXPECT_EQ(shmem_team_n_pes(even), neven);
    EXPECT_EQ(shmem_team_translate_pe(even, shmem_team_my_pe(even), SHMEM_TEAM_WORLD), me());
    shmem_team_config_t got{};
    shmem_team_get_config(even, SHMEM_TEAM_NUM_CONTEXTS, &got);
    EXPECT_EQ(got.num_contexts, 3);
    // A sync of the sub-team waits for all of its members and only for them (the odd PEs are elsewhere):
    // every member bumps the counter before the first sync of a round, so after it every member sees
    // exactly neven more; nobody bumps again before all have read it (the second sync).
    for (long i = 1; i <= 50; ++i) {
      shmem_long_atomic_inc(count, 0);
      EXPECT_EQ(shmem_team_sync(even), 0);
      EXPECT_EQ(shmem_long_atomic_fetch(count, 0), i * neven) << "after sync " << i;
      EXPECT_EQ(shmem_team_sync(even), 0);
    }
  } else {
    EXPECT_EQ(even, SHMEM_TEAM_INVALID);
  }
  if (nodd > 0) {
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 1, 2, nodd, nullptr, 0, &odd), 0);
    EXPECT_EQ(odd != SHMEM_TEAM_INVALID, me() % 2 == 1);
    if (odd != SHMEM_TEAM_INVALID) {
      EXPECT_EQ(shmem_team_translate_pe(odd, 0, SHMEM_TEAM_WORLD), 1);
      if (even != SHMEM_TEAM_INVALID) ADD_FAILURE() << "PE in both teams";
      shmem_team_destroy(odd);
    }
  }
  if (even != SHMEM_TEAM_INVALID) shmem_team_destroy(even);
  shmem_barrier_all();
  shmem_free(count);
}

TEST(Team, SplitOfASplitComposesStrides) {
  shmem_team_t even, quarter;
  int neven = (npes() + 1) / 2;
  ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 2, neven, nullptr, 0, &even), 0);
  if (even != SHMEM_TEAM_INVALID) {
    int nq = (neven + 1) / 2;
    ASSERT_EQ(shmem_team_split_strided(even, 0, 2, nq, nullptr, 0, &quarter), 0);
    EXPECT_EQ(quarter != SHMEM_TEAM_INVALID, me() % 4 == 0);
    if (quarter != SHMEM_TEAM_INVALID) {
      EXPECT_EQ(shmem_team_my_pe(quarter), me() / 4);
      EXPECT_EQ(shmem_team_translate_pe(quarter, shmem_team_n_pes(quarter) - 1, SHMEM_TEAM_WORLD), 4 * (nq - 1));
      EXPECT_EQ(shmem_team_translate_pe(SHMEM_TEAM_WORLD, 4 * (nq - 1), even), 2 * (nq - 1));
      shmem_team_sync(quarter);
      shmem_team_destroy(quarter);
    }
    shmem_team_sync(even);
    shmem_team_destroy(even);
  }
  shmem_barrier_all();
}

TEST(Team, Split2d) {
  shmem_team_t x, y;
  int xr = 2;
  ASSERT_EQ(shmem_team_split_2d(SHMEM_TEAM_WORLD, xr, nullptr, 0, &x, nullptr, 0, &y), 0);
  ASSERT_NE(x, SHMEM_TEAM_INVALID);
  ASSERT_NE(y, SHMEM_TEAM_INVALID);
  EXPECT_EQ(shmem_team_my_pe(x), me() % xr);
  EXPECT_EQ(shmem_team_my_pe(y), me() / xr);
  EXPECT_EQ(shmem_team_n_pes(x), std::min(xr, npes() - (me() / xr) * xr));
  EXPECT_EQ(shmem_team_n_pes(y), (npes() - me() % xr + xr - 1) / xr);
  EXPECT_EQ(shmem_team_translate_pe(y, 0, SHMEM_TEAM_WORLD), me() % xr);
  for (int i = 0; i < 20; ++i) {
    shmem_team_sync(x);
    shmem_team_sync(y);
  }
  shmem_team_destroy(x);
  shmem_team_destroy(y);
  shmem_barrier_all();
}

TEST(Team, CreateDestroyManyTimesReusesSlots) {
  // Far more teams than slots over the run: slots must be recycled and barriers stay consistent. Every sync
  // of a recycled slot still holds every member: what each member wrote before it is there after it (a
  // member's barrier word left over from the slot's previous team would let the sync pass early).
  static int mark[64];
  ASSERT_LE(npes(), 64);
  for (int round = 0; round < 200; ++round) {
    shmem_team_t t;
    int size = 1 + round % npes();
    ASSERT_EQ(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, size, nullptr, 0, &t), 0);
    if (t != SHMEM_TEAM_INVALID) {
      EXPECT_EQ(shmem_team_n_pes(t), size);
      for (int k = 0; k < 3; ++k) {
        const int v = round * 3 + k + 1;
        for (int p = 0; p < size; ++p) shmem_int_p(&mark[me()], v, p);
        shmem_quiet();
        shmem_team_sync(t);
        for (int p = 0; p < size; ++p) ASSERT_EQ(mark[p], v) << "PE " << p << ", round " << round << ", sync " << k;
        shmem_team_sync(t);
      }
      shmem_team_destroy(t);
    }
  }
  shmem_barrier_all();
}

TEST(Team, BadSplitArgumentsFailOnEveryPe) {
  shmem_team_t t = SHMEM_TEAM_WORLD;
  EXPECT_NE(shmem_team_split_strided(SHMEM_TEAM_WORLD, 0, 1, npes() + 1, nullptr, 0, &t), 0);
  EXPECT_EQ(t, SHMEM_TEAM_INVALID);
  EXPECT_NE(shmem_team_split_strided(SHMEM_TEAM_WORLD, -1, 1, 1, nullptr, 0, &t), 0);
  EXPECT_NE(shmem_team_split_2d(SHMEM_TEAM_WORLD, 0, nullptr, 0, &t, nullptr, 0, &t), 0);
  shmem_barrier_all();
}

}  // namespace
