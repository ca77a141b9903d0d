/* parser.y - grammar of the model language (docs/language.md). Statements end
 * at a newline (lines may also break after '(' '[' ',' and before ')' ']');
 * after a syntax error the parser skips to the end of the line and goes on, so
 * one run reports several errors. */
%define api.pure full
%locations
%define parse.error detailed
%lex-param {yyscan_t scanner}
%parse-param {yyscan_t scanner} {fe_ctx *ctx}

%code top {
#include <string.h>
}

%code requires {
#include "parse_ctx.h"
typedef void *yyscan_t;
typedef struct { ast_stmt *head, *tail; } stmt_list;
typedef struct { ast_param *head, *tail; } param_list;
typedef struct { ast_arg *head, *tail; } arg_list;
typedef struct { ast_expr *head, *tail; } expr_list;
typedef struct { ast_name *head, *tail; } name_list;
}

%code {
#define YYMAXDEPTH 1000 /* bounds the nesting of expressions, so later recursion is bounded too */
int yylex(YYSTYPE *lval, YYLTYPE *lloc, yyscan_t scanner);
static void yyerror(YYLTYPE *l, yyscan_t scanner, fe_ctx *ctx, const char *msg);
#define L(l) fe_loc(ctx, (l).first_line, (l).first_column)
static void add_decl(fe_ctx *ctx, ast_decl_kind kind, ir_loc loc, const char *name, ir_loc name_loc,
                     ast_param *params, ast_stmt *body);
static ast_expr *binary(fe_ctx *ctx, char op, ast_expr *a, ast_expr *b, ir_loc loc);
static ast_type *make_type(fe_ctx *ctx, const char *name, ir_loc loc, bool has_dims, ast_expr *dims);
static ast_expr *list(fe_ctx *ctx, ast_expr *first, ir_loc loc);
static ast_name *name_new(fe_ctx *ctx, const char *name, ir_loc loc);
}

%union {
    int64_t i;
    double f;
    const char *s;
    ast_expr *expr;
    ast_type *type;
    ast_stmt *stmt;
    ast_param *param;
    ast_arg *arg;
    stmt_list stmts;
    param_list params;
    arg_list args;
    expr_list exprs;
    name_list names;
}

%token <s> IDENT "identifier" STRING "string"
%token <i> INT "integer"
%token <f> FLOAT "number"
%token NL "end of line"
%token USE "'use'" FN "'fn'" PARAM "'param'" MODEL "'model'" INPUT "'input'" LOSS "'loss'"
%token STATE "'state'" METRIC "'metric'" OUTPUT "'output'" TRAIN "'train'" RETURN "'return'"
%token PER "'per'" REPLICA "'replica'" GLOBAL "'global'"
%token IF "'if'" ELSE "'else'" FOR "'for'" IN "'in'" AND "'and'" OR "'or'" NOT "'not'"
%token LE "'<='" GE "'>='" EQ "'=='" NE "'!='" PLUSEQ "'+='"

%left OR
%left AND
%precedence NOT
%nonassoc '<' '>' LE GE EQ NE
%left '+' '-'
%left '*' '/'
%precedence NEG
%precedence '[' '('

%type <expr> expr primary name
%type <type> type
%type <stmt> stmt if_stmt
%type <names> names
%type <stmts> stmts block
%type <param> param
%type <params> params
%type <arg> arg
%type <args> args
%type <exprs> dims exprs
%type <i> suffix

%%

/* program -> (decl? NL)* */
program
    : %empty
    | program NL
    | program decl NL
    | program error NL
    ;

/* decl -> USE IDENT | FN IDENT '(' params ')' block | MODEL IDENT block | TRAIN IDENT block */
decl
    : USE IDENT                           { add_decl(ctx, DECL_USE, L(@1), $2, L(@2), NULL, NULL); }
    | FN IDENT '(' nl_opt ')' block       { add_decl(ctx, DECL_FN, L(@1), $2, L(@2), NULL, $6.head); }
    | FN IDENT '(' nl_opt params trail ')' block
                                          { add_decl(ctx, DECL_FN, L(@1), $2, L(@2), $5.head, $8.head); }
    | MODEL IDENT block                   { add_decl(ctx, DECL_MODEL, L(@1), $2, L(@2), NULL, $3.head); }
    | TRAIN IDENT block                   { add_decl(ctx, DECL_TRAIN, L(@1), $2, L(@2), NULL, $3.head); }
    ;

nl_opt
    : %empty
    | NL
    ;

/* the end of a list: an optional ',' and line break */
trail
    : nl_opt
    | ',' nl_opt
    ;

params
    : param                    { $$ = (param_list){$1, $1}; }
    | params ',' nl_opt param  { $$ = $1; $$.tail->next = $4; $$.tail = $4; }
    ;

/* param -> IDENT [':' type] ['=' expr] */
param
    : IDENT                    { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_param){$1, NULL, NULL, L(@1), NULL}; }
    | IDENT ':' type           { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_param){$1, $3, NULL, L(@1), NULL}; }
    | IDENT '=' expr           { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_param){$1, NULL, $3, L(@1), NULL}; }
    | IDENT ':' type '=' expr  { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_param){$1, $3, $5, L(@1), NULL}; }
    ;

/* type -> FN | IDENT | IDENT '[' dims ']' */
type
    : FN                   { $$ = make_type(ctx, "fn", L(@1), false, NULL); }
    | IDENT                { $$ = make_type(ctx, $1, L(@1), false, NULL); }
    | IDENT '[' nl_opt dims trail ']'  { $$ = make_type(ctx, $1, L(@1), true, $4.head); }
    | IDENT '[' nl_opt ']'             { $$ = make_type(ctx, $1, L(@1), true, NULL); }
    ;

dims
    : expr            { $$ = (expr_list){$1, $1}; }
    | dims ',' nl_opt expr   { $$ = $1; $$.tail->next = $4; $$.tail = $4; }
    ;

/* block -> '{' (stmt? NL)* stmt? '}' */
block
    : '{' stmts '}'        { $$ = $2; }
    | '{' stmts stmt '}'   { $$ = $2; if ($$.tail) $$.tail->next = $3; else $$.head = $3; $$.tail = $3; }
    ;

stmts
    : %empty            { $$ = (stmt_list){0}; }
    | stmts NL
    | stmts stmt NL     { $$ = $1; if ($$.tail) $$.tail->next = $2; else $$.head = $2; $$.tail = $2; }
    | stmts error NL    { $$ = $1; yyerrok; }
    ;

/* stmt -> IDENT '=' expr suffix | (PARAM | STATE) IDENT ':' type '=' expr | RETURN expr
 *       | INPUT IDENT ':' type | LOSS '=' expr | LOSS PLUSEQ expr | METRIC IDENT '=' expr
 *       | OUTPUT IDENT ['=' expr]
 *       | IDENT (',' IDENT)+ '=' expr | RETURN expr (',' expr)* | if_stmt | FOR IDENT IN expr block */
stmt
    : IDENT '=' expr suffix           { $$ = ast_stmt_new(ctx->arena, ST_ASSIGN, L(@1)); $$->name = $1; $$->name_loc = L(@1);
                                        $$->expr = $3; $$->suffix = (int)$4; }
    | PARAM IDENT ':' type '=' expr   { $$ = ast_stmt_new(ctx->arena, ST_PARAM, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->type = $4; $$->expr = $6; }
    | STATE IDENT ':' type '=' expr   { $$ = ast_stmt_new(ctx->arena, ST_STATE, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->type = $4; $$->expr = $6; }
    | names ',' IDENT '=' expr        { $$ = ast_stmt_new(ctx->arena, ST_ASSIGN, L(@1)); $$->targets = $1.head;
                                        ast_name *n = name_new(ctx, $3, L(@3)); $1.tail->next = n;
                                        $$->name = $1.head->name; $$->name_loc = $1.head->loc; $$->expr = $5; }
    | RETURN expr                     { $$ = ast_stmt_new(ctx->arena, ST_RETURN, L(@1)); $$->expr = $2; }
    | RETURN expr ',' exprs           { $$ = ast_stmt_new(ctx->arena, ST_RETURN, L(@1));
                                        $2->next = $4.head; $$->expr = list(ctx, $2, L(@2)); }
    | if_stmt
    | FOR IDENT IN expr block         { $$ = ast_stmt_new(ctx->arena, ST_FOR, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->expr = $4; $$->body = $5.head; }
    | INPUT IDENT ':' type            { $$ = ast_stmt_new(ctx->arena, ST_INPUT, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->type = $4; }
    | LOSS '=' expr                   { $$ = ast_stmt_new(ctx->arena, ST_LOSS, L(@1)); $$->expr = $3; }
    | LOSS PLUSEQ expr                { $$ = ast_stmt_new(ctx->arena, ST_ADD_LOSS, L(@1)); $$->expr = $3; }
    | METRIC IDENT '=' expr           { $$ = ast_stmt_new(ctx->arena, ST_METRIC, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->expr = $4; }
    | OUTPUT IDENT                    { $$ = ast_stmt_new(ctx->arena, ST_OUTPUT, L(@1)); $$->name = $2; $$->name_loc = L(@2); }
    | OUTPUT IDENT '=' expr           { $$ = ast_stmt_new(ctx->arena, ST_OUTPUT, L(@1)); $$->name = $2; $$->name_loc = L(@2);
                                        $$->expr = $4; }
    ;

/* if_stmt -> IF expr block [ELSE (block | if_stmt)] */
if_stmt
    : IF expr block                   { $$ = ast_stmt_new(ctx->arena, ST_IF, L(@1)); $$->expr = $2; $$->body = $3.head; }
    | IF expr block ELSE block        { $$ = ast_stmt_new(ctx->arena, ST_IF, L(@1)); $$->expr = $2; $$->body = $3.head;
                                        $$->orelse = $5.head; }
    | IF expr block ELSE if_stmt      { $$ = ast_stmt_new(ctx->arena, ST_IF, L(@1)); $$->expr = $2; $$->body = $3.head;
                                        $$->orelse = $5; }
    ;

/* the first names of `a, b = expr` */
names
    : IDENT                           { ast_name *n = name_new(ctx, $1, L(@1)); $$ = (name_list){n, n}; }
    | names ',' IDENT                 { ast_name *n = name_new(ctx, $3, L(@3)); $$ = $1; $$.tail->next = n; $$.tail = n; }
    ;

suffix
    : %empty        { $$ = BATCH_PLAIN; }
    | PER REPLICA   { $$ = BATCH_PER_REPLICA; }
    | GLOBAL        { $$ = BATCH_GLOBAL; }
    ;

expr
    : expr '+' expr           { $$ = binary(ctx, '+', $1, $3, L(@2)); }
    | expr '-' expr           { $$ = binary(ctx, '-', $1, $3, L(@2)); }
    | expr '*' expr           { $$ = binary(ctx, '*', $1, $3, L(@2)); }
    | expr '/' expr           { $$ = binary(ctx, '/', $1, $3, L(@2)); }
    | expr '<' expr           { $$ = binary(ctx, '<', $1, $3, L(@2)); }
    | expr '>' expr           { $$ = binary(ctx, '>', $1, $3, L(@2)); }
    | expr LE expr            { $$ = binary(ctx, AST_LE, $1, $3, L(@2)); }
    | expr GE expr            { $$ = binary(ctx, AST_GE, $1, $3, L(@2)); }
    | expr EQ expr            { $$ = binary(ctx, AST_EQ, $1, $3, L(@2)); }
    | expr NE expr            { $$ = binary(ctx, AST_NE, $1, $3, L(@2)); }
    | expr AND expr           { $$ = binary(ctx, AST_AND, $1, $3, L(@2)); }
    | expr OR expr            { $$ = binary(ctx, AST_OR, $1, $3, L(@2)); }
    | NOT expr                { $$ = ast_expr_new(ctx->arena, EX_NOT, L(@1)); $$->lhs = $2; }
    | '-' expr %prec NEG      { $$ = ast_expr_new(ctx->arena, EX_NEG, L(@1)); $$->lhs = $2; }
    | primary
    ;

exprs
    : expr                    { $$ = (expr_list){$1, $1}; }
    | exprs ',' expr          { $$ = $1; $$.tail->next = $3; $$.tail = $3; }
    ;

/* primary -> INT | FLOAT | STRING | name | primary '(' args ')' | '(' expr ')' */
primary
    : INT                     { $$ = ast_expr_new(ctx->arena, EX_INT, L(@1)); $$->ival = $1; }
    | FLOAT                   { $$ = ast_expr_new(ctx->arena, EX_FLOAT, L(@1)); $$->fval = $1; }
    | STRING                  { $$ = ast_expr_new(ctx->arena, EX_STR, L(@1)); $$->name = $1; }
    | name
    | primary '(' nl_opt ')'  { $$ = ast_expr_new(ctx->arena, EX_CALL, $1->loc); $$->lhs = $1; }
    | primary '(' nl_opt args trail ')'
                              { $$ = ast_expr_new(ctx->arena, EX_CALL, $1->loc); $$->lhs = $1; $$->args = $4.head; }
    | '(' nl_opt expr nl_opt ')'  { $$ = $3; }
    | '[' ']'                 { $$ = list(ctx, NULL, L(@1)); }
    | '[' exprs trail ']'     { $$ = list(ctx, $2.head, L(@1)); }
    | primary '[' expr ']'    { $$ = ast_expr_new(ctx->arena, EX_INDEX, L(@2)); $$->lhs = $1; $$->rhs = $3; }
    ;

/* name -> IDENT ['.' IDENT] */
name
    : IDENT             { $$ = ast_expr_new(ctx->arena, EX_NAME, L(@1)); $$->name = $1; }
    | IDENT '.' IDENT   {
                            $$ = ast_expr_new(ctx->arena, EX_NAME, L(@1));
                            size_t n1 = strlen($1), n3 = strlen($3);
                            char *s = ast_alloc(ctx->arena, n1 + n3 + 2);
                            memcpy(s, $1, n1), s[n1] = '.', memcpy(s + n1 + 1, $3, n3 + 1);
                            $$->name = s;
                        }
    ;

args
    : arg                  { $$ = (arg_list){$1, $1}; }
    | args ',' nl_opt arg  { $$ = $1; $$.tail->next = $4; $$.tail = $4; }
    ;

/* arg -> [IDENT ':'] expr */
arg
    : expr              { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_arg){NULL, $1, $1->loc, NULL}; }
    | IDENT ':' expr    { $$ = ast_alloc(ctx->arena, sizeof *$$); *$$ = (ast_arg){$1, $3, L(@1), NULL}; }
    ;

%%

static void yyerror(YYLTYPE *l, yyscan_t scanner, fe_ctx *ctx, const char *msg) {
    (void)scanner;
    if (!strcmp(msg, "memory exhausted")) msg = "expression nested too deeply";
    ir_diag_error(ctx->diag, L(*l), "%s", msg);
    ctx->depth = 0; /* an unclosed bracket must not hide the line ends recovery skips to */
}

static void add_decl(fe_ctx *ctx, ast_decl_kind kind, ir_loc loc, const char *name, ir_loc name_loc,
                     ast_param *params, ast_stmt *body) {
    ast_decl *d = ast_alloc(ctx->arena, sizeof *d);
    *d = (ast_decl){kind, loc, name, name_loc, params, body, ctx->in_module, NULL};
    if (ctx->tail) ctx->tail->next = d;
    else ctx->decls = d;
    ctx->tail = d;
}

static ast_expr *binary(fe_ctx *ctx, char op, ast_expr *a, ast_expr *b, ir_loc loc) {
    ast_expr *e = ast_expr_new(ctx->arena, EX_BINARY, loc);
    e->op = op, e->lhs = a, e->rhs = b;
    return e;
}

/* Types: int, float, str, fn, a dtype (any shape) or dtype[dims]. */
static ast_type *make_type(fe_ctx *ctx, const char *name, ir_loc loc, bool has_dims, ast_expr *dims) {
    ast_type *t = ast_alloc(ctx->arena, sizeof *t);
    t->loc = loc, t->rank = -1, t->dtype = ir_dtype_from_name(name);
    if (t->dtype >= 0) {
        t->kind = TY_TENSOR;
        if (has_dims) {
            t->dims = dims, t->rank = 0;
            for (ast_expr *e = dims; e; e = e->next) t->rank++;
        }
        return t;
    }
    t->kind = !strcmp(name, "int") ? TY_INT : !strcmp(name, "float") ? TY_FLOAT : !strcmp(name, "str") ? TY_STR
            : !strcmp(name, "fn") ? TY_FN : !strcmp(name, "list") ? TY_LIST : TY_ANY;
    if (t->kind == TY_ANY) ir_diag_error(ctx->diag, loc, "unknown type '%s'", name);
    else if (has_dims) ir_diag_error(ctx->diag, loc, "type '%s' takes no dimensions", name);
    return t;
}

/* [a, b, ...]: the elements linked by next */
static ast_expr *list(fe_ctx *ctx, ast_expr *first, ir_loc loc) {
    ast_expr *e = ast_expr_new(ctx->arena, EX_LIST, loc);
    e->lhs = first;
    return e;
}

static ast_name *name_new(fe_ctx *ctx, const char *name, ir_loc loc) {
    ast_name *n = ast_alloc(ctx->arena, sizeof *n);
    *n = (ast_name){name, loc, NULL};
    return n;
}
