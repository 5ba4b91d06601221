package planner

import (
	"github.com/basindb/basin/catalog"
	"github.com/basindb/basin/internal/pgerr"
)

// The regular-expression functions that return arrays or sets, which
// eval runs (eval/regexpfuncs.go).

func init() {
	registerCatalogFunc("regexp_match", sig(2, 3, tTexts, tText, tText, tText))
	registerCatalogFunc("regexp_split_to_array", sig(2, 3, tTexts, tText, tText, tText))
	textSRF := func(name string, result catalog.Type) srfSig {
		return srfSig{func(args []Scalar, pos int) ([]Scalar, catalog.Type, []catalog.Column, error) {
			if len(args) < 2 || len(args) > 3 {
				return nil, 0, nil, pgerr.New(pgerr.UndefinedFunction, "function %s(%s) does not exist", name, argTypes(args)).WithPosition(pos).
					WithHint("No function matches the given name and argument types. You might need to add explicit type casts.")
			}
			b := &binder{}
			for i := range args {
				var err error
				if args[i], err = b.coerce(args[i], catalog.Varchar, pos, name); err != nil {
					return nil, 0, nil, err
				}
			}
			return args, result, nil, nil
		}}
	}
	setReturningFuncs["regexp_matches"] = textSRF("regexp_matches", tTexts)
	setReturningFuncs["regexp_split_to_table"] = textSRF("regexp_split_to_table", tText)
}
