package rules

import (
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// enforceMatcher makes every vector and matrix selector of expr (matrix selectors wrap a vector
// selector, subqueries an expression) select only series whose label equals value: a matcher
// label="value" replaces whatever matchers on that label the author wrote. It returns the
// expression printed back; expr is changed in place.
func enforceMatcher(expr parser.Expr, label, value string) string {
	enforced := labels.MustNewMatcher(labels.MatchEqual, label, value)
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		vs, ok := node.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		matchers := make([]*labels.Matcher, 0, len(vs.LabelMatchers)+1)
		for _, m := range vs.LabelMatchers {
			if m.Name != label {
				matchers = append(matchers, m)
			}
		}
		vs.LabelMatchers = append(matchers, enforced)
		return nil
	})
	return expr.String()
}
