package policy

import (
	"errors"
	"fmt"
	"sync"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/ext"
	"cel.dev/cel-go/interpreter"
)

// Bounds of a rule's condition. A condition is written by whoever writes
// the policy, but it runs on every matching call with arguments a client
// chose, so both its size and the work one evaluation may do are bounded.
const (
	// MaxConditionLen is the longest condition, in characters.
	MaxConditionLen = 4096
	// MaxConditionDepth is how deeply a condition may nest.
	MaxConditionDepth = 32
	// MaxConditionCost is the CEL cost one evaluation may spend (about
	// one unit per operation, more for work on long strings and lists). A
	// condition that would spend more stops with an error, which Decide
	// treats as any other evaluation error.
	MaxConditionCost = 100_000
	// MaxFaultLen bounds the text of Decision.Fault.
	MaxFaultLen = 200
)

// The variables a condition sees.
const (
	varArgs   = "args"
	varServer = "server"
	varTool   = "tool"
	varClient = "client"
)

// celEnv is the one CEL environment of every condition: the standard
// library, the strings extension, and the call's variables. Numbers of
// different types compare by value (1 == 1.0, 2 > 1.5), as JSON has one
// number type.
var celEnv = sync.OnceValues(func() (*cel.Env, error) {
	return cel.NewEnv(
		cel.Variable(varArgs, cel.MapType(cel.StringType, cel.DynType)),
		cel.Variable(varServer, cel.StringType),
		cel.Variable(varTool, cel.StringType),
		cel.Variable(varClient, cel.StringType),
		cel.CrossTypeNumericComparisons(true),
		ext.Strings(),
		cel.ParserExpressionSizeLimit(MaxConditionLen),
		cel.ParserRecursionLimit(MaxConditionDepth),
		cel.RegexProgramSizeLimit(1000),
	)
})

// condition is a compiled `when` expression.
type condition struct {
	src string
	prg cel.Program
}

// compileCondition compiles src, or says why it cannot be a condition.
func compileCondition(src string) (*condition, error) {
	env, err := celEnv()
	if err != nil {
		return nil, fmt.Errorf("the condition language did not start: %w", err)
	}
	ast, iss := env.Compile(src)
	if iss.Err() != nil {
		return nil, fmt.Errorf("the condition does not compile: %v", iss.Err())
	}
	if t := ast.OutputType(); !t.IsExactType(types.BoolType) {
		return nil, fmt.Errorf("the condition gives %s, not bool; compare a value, like args.dry_run == true", t)
	}
	prg, err := env.Program(ast, cel.CostLimit(MaxConditionCost), cel.EvalOptions(cel.OptOptimize))
	if err != nil {
		return nil, fmt.Errorf("the condition does not compile: %v", err)
	}
	return &condition{src: src, prg: prg}, nil
}

// eval runs the condition on one call's variables.
func (c *condition) eval(v *callVars) (bool, error) {
	out, _, err := c.prg.Eval(v)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		// The checker proved the type is bool; keep the fail-safe path
		// for anything else all the same.
		return false, errors.New("the condition did not give a bool")
	}
	return bool(b), nil
}

// callVars is the activation of one call: the names a condition may use.
// The arguments are read on first use, at most once per decision, so a
// decision that evaluates no condition never reads them.
type callVars struct {
	call   Call
	read   bool
	args   args
	argVal ref.Val
}

var _ interpreter.Activation = (*callVars)(nil)

// ResolveName implements interpreter.Activation.
func (v *callVars) ResolveName(name string) (any, bool) {
	switch name {
	case varArgs:
		return v.arguments(), true
	case varServer:
		return types.String(v.call.Server), true
	case varTool:
		return types.String(v.call.Tool), true
	case varClient:
		return types.String(v.call.Client), true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (v *callVars) Parent() interpreter.Activation { return nil }

// arguments returns the arguments as a CEL map, or a CEL error when they
// are unreadable, so every condition that reads them fails to evaluate.
func (v *callVars) arguments() ref.Val {
	if !v.read {
		v.read = true
		v.args = readArgs(v.call.Arguments, false)
		if v.args.fault != nil {
			v.argVal = types.NewErr("%s", v.args.fault.Error())
		} else {
			v.argVal = types.DefaultTypeAdapter.NativeToValue(v.args.value)
		}
	}
	return v.argVal
}
