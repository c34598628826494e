package postgres

// The SCRAM helpers, for the tests of package postgres_test.
var (
	SCRAMVerifier = scramVerifier
	Verifies      = verifies
	ScheduleGap   = scheduleGap
)
