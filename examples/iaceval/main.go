// Command iaceval trains the interference predictor (package iac's MLP) and
// its two baselines (linear regression and gradient-boosted trees) on a
// user's measurements and prints how well each predicts slowdowns it did not
// see.
//
//	go run ./examples/iaceval -profiles P.csv -pairs Q.csv                  # 5-fold cross-validation
//	go run ./examples/iaceval -profiles P.csv -pairs Q.csv -holdout LM,A3C  # test on every pair touching LM or A3C
//	go run ./examples/iaceval -profiles P.csv -pairs Q.csv -lofo            # leave each family out in turn
//	go run ./examples/iaceval -profiles P.csv -pairs Q.csv \
//	    -test-profiles P2.csv -test-pairs Q2.csv                           # train on one set, test on another
//
// -json prints the report(s) as JSON instead of a table:
// {"mlp":{"mape":…,"r2":…},"gbdt":{…},"linear":{…},"train_pairs":…,"test_pairs":…}
// (MAPE in percent; pairs are ordered pairs, one per measured direction;
// null for a metric that cannot be computed, such as R² of a test set whose
// slowdowns are all equal: see Metrics in package iac/train).
// The file formats are documented in iac.ReadProfiles and
// iac.Dataset.ReadPairs; examples/gavel2csv writes Gavel's data in them.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/train"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "iaceval:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("iaceval", flag.ContinueOnError)
	profiles := fs.String("profiles", "", "profiles.csv (required)")
	pairs := fs.String("pairs", "", "pairs.csv (required)")
	holdout := fs.String("holdout", "", "comma-separated families to test on after training on the rest")
	lofo := fs.Bool("lofo", false, "leave each family out in turn")
	testProfiles := fs.String("test-profiles", "", "profiles.csv to test on (with -test-pairs) after training on all of -profiles/-pairs")
	testPairs := fs.String("test-pairs", "", "pairs.csv to test on")
	folds := fs.Int("folds", 5, "cross-validation folds")
	seed := fs.Uint64("seed", 1, "random seed (splits, initial weights, dropout, subsamples)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *profiles == "" || *pairs == "" {
		return fmt.Errorf("-profiles and -pairs are required")
	}
	modes := 0
	for _, on := range []bool{*holdout != "", *lofo, *testProfiles != "" || *testPairs != ""} {
		if on {
			modes++
		}
	}
	if modes > 1 {
		return fmt.Errorf("-holdout, -lofo and -test-profiles/-test-pairs exclude one another")
	}
	d, err := read(*profiles, *pairs)
	if err != nil {
		return err
	}
	cfg := train.EvalConfig{Folds: *folds}
	rng := rand.New(rand.NewPCG(*seed, 0))
	var reports []*train.Report
	switch {
	case *holdout != "":
		var fams []string
		for _, f := range strings.Split(*holdout, ",") {
			fams = append(fams, strings.TrimSpace(f))
		}
		r, err := train.Holdout(d, fams, cfg, rng)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	case *lofo:
		if reports, err = train.LeaveOneFamilyOut(d, cfg, rng); err != nil {
			return err
		}
	case *testProfiles != "" || *testPairs != "":
		if *testProfiles == "" || *testPairs == "" {
			return fmt.Errorf("-test-profiles and -test-pairs go together")
		}
		test, err := read(*testProfiles, *testPairs)
		if err != nil {
			return err
		}
		r, err := train.Transfer(d, test, cfg, rng)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	default:
		r, err := train.CrossValidate(d, cfg, rng)
		if err != nil {
			return err
		}
		reports = append(reports, r)
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if len(reports) == 1 {
			return enc.Encode(reports[0])
		}
		return enc.Encode(reports)
	}
	for _, r := range reports {
		printReport(stdout, r)
	}
	if len(reports) > 1 {
		printSummary(stdout, reports)
	}
	return nil
}

func read(profiles, pairs string) (*iac.Dataset, error) {
	pf, err := os.Open(profiles)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	qf, err := os.Open(pairs)
	if err != nil {
		return nil, err
	}
	defer qf.Close()
	return iac.ReadDataset(pf, profiles, qf, pairs)
}

func printReport(w io.Writer, r *train.Report) {
	fmt.Fprintf(w, "%s: trained on %d ordered pairs, tested on %d\n", r.Mode, r.TrainPairs, r.TestPairs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "model\tMAPE %\tR²\tspeed MAPE %\t")
	for _, m := range []struct {
		name string
		m    train.Metrics
	}{{"mlp", r.MLP}, {"gbdt", r.GBDT}, {"linear", r.Linear}} {
		fmt.Fprintf(tw, "%s\t%.1f\t%.3f\t%.1f\t\n", m.name, m.m.MAPE, m.m.R2, m.m.SpeedMAPE)
	}
	tw.Flush()
	fmt.Fprintln(w, "by victim family (MAPE %):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "family\tn\tmlp\tgbdt\tlinear\t")
	for _, f := range r.PerFamily {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t\n", f.Family, f.MLP.N, f.MLP.MAPE, f.GBDT.MAPE, f.Linear.MAPE)
	}
	tw.Flush()
	fmt.Fprintln(w)
}

func printSummary(w io.Writer, rs []*train.Report) {
	fmt.Fprintln(w, "summary (MAPE % on the held-out family's pairs):")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "held out\tpairs\tmlp\tgbdt\tlinear\tmlp R²\t")
	var sm, sg, sl float64
	for _, r := range rs {
		name := strings.TrimPrefix(r.Mode, "holdout ")
		if i := strings.Index(name, " on "); i >= 0 {
			name = name[:i]
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.3f\t\n", name, r.TestPairs, r.MLP.MAPE, r.GBDT.MAPE, r.Linear.MAPE, r.MLP.R2)
		sm += r.MLP.MAPE
		sg += r.GBDT.MAPE
		sl += r.Linear.MAPE
	}
	n := float64(len(rs))
	fmt.Fprintf(tw, "mean\t\t%.1f\t%.1f\t%.1f\t\t\n", sm/n, sg/n, sl/n)
	tw.Flush()
}
