//! `foldl` and `foldr`, unrolled.

use alloc::string::String;

use super::{Gen, MAX_CODE};
use crate::plan::ast::{ExprKind, Pos};
use crate::plan::error::PlanError;

impl Gen<'_> {
    /// `foldl` / `foldr`: unrolled exactly for a list literal, else `fold_bound` times with
    /// each step guarded. `foldr` first reverses the list (an unrolled walk consing each
    /// element onto a new list), then folds that from the left with the iterator's
    /// arguments swapped: the elements are still evaluated in source order.
    #[inline(never)]
    pub(super) fn fold(&mut self, fold: &ExprKind, pos: Pos) -> Result<(), PlanError> {
        let ExprKind::Fold {
            func,
            init,
            list,
            right,
        } = fold
        else {
            return Ok(());
        };
        let (func, right) = (func.as_str(), *right);
        let f = self
            .fns
            .get(func)
            .copied()
            .ok_or_else(|| PlanError::UnknownService {
                line: pos.line,
                col: pos.col,
                name: String::from(func),
            })?;
        self.expr(init)?;
        self.expr(list)?; // [acc l]
        let (steps, guarded) = match &list.kind {
            ExprKind::List(items) => (items.len() as u32, false),
            _ => (self.opts.fold_bound, true),
        };
        if right {
            self.reverse(steps, guarded, pos)?;
        }
        let done = self.label();
        for _ in 0..steps {
            if self.count > MAX_CODE {
                return Err(Self::too_large(pos));
            }
            if guarded {
                self.op("pull", 0);
                self.op("istag", "tuple");
                self.op("bez", &done);
            }
            if right {
                self.op("pull", 0);
                self.op("nth", 0);
                self.op("pull", 2); // [acc l x acc]
            } else {
                self.op("pull", 1);
                self.op("pull", 1);
                self.op("nth", 0); // [acc l acc x]
            }
            self.depth += 2;
            self.inline(f)?; // [acc l r]
            self.op("store", 2); // [r l]
            self.op("nth", 1); // [r tl]
            self.depth -= 1;
        }
        if guarded && !right {
            // Longer than the bound: the packet cannot finish the fold. (A reversed list
            // was checked while it was reversed.)
            self.list_end_guard(&done);
        }
        self.place(&done);
        self.op("pop", "");
        self.depth -= 1;
        Ok(())
    }

    /// `[acc l]` to `[acc rev(l)]`, walking at most `steps` cells.
    fn reverse(&mut self, steps: u32, guarded: bool, pos: Pos) -> Result<(), PlanError> {
        let done = self.label();
        self.push(0); // [acc l r]
        for _ in 0..steps {
            if self.count > MAX_CODE {
                return Err(Self::too_large(pos));
            }
            if guarded {
                self.op("pull", 1);
                self.op("istag", "tuple");
                self.op("bez", &done);
            }
            self.op("pull", 1);
            self.op("nth", 0);
            self.op("pull", 1);
            self.op("mktup", 2); // [acc l r x::r]
            self.op("store", 1); // [acc l x::r]
            self.op("pull", 1);
            self.op("nth", 1);
            self.op("store", 2); // [acc tl x::r]
        }
        if guarded {
            self.op("pull", 1);
            self.op("istag", "tuple");
            self.op("bez", &done);
            self.op("exit", "");
        }
        self.place(&done);
        self.op("store", 1); // [acc rev]
        self.depth -= 1;
        Ok(())
    }

    /// Ends the packet unless the list on top is empty, else goes to `done`.
    fn list_end_guard(&mut self, done: &str) {
        self.op("pull", 0);
        self.op("istag", "tuple");
        self.op("bez", done);
        self.op("exit", "");
    }
}
