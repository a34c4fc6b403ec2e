//! Linear combinations `c1·a1 + ... + cn·an + c0` of atoms with `i64` coefficients: the normal
//! form of the affine simplifier ([`crate::simplify`]) and the equations of `replace`'s
//! unification ([`crate::prims::replace`]). The arithmetic is checked: an operation that would
//! overflow gives `None`.

/// What a linear form combines. Two atoms are merged when they are equal.
pub(crate) trait Atom: Clone + PartialEq {
    /// Whether an atom whose coefficient cancels to zero leaves the form (`true`), or keeps its
    /// place and so its position if it comes back (`false`: the simplifier prints the terms in
    /// the order of their first appearance and drops the zero ones only then).
    const DROP_ZEROS: bool;
}

/// `Σ c·atom + constant`, each atom once, in the order of its first appearance.
#[derive(Clone, Debug)]
pub(crate) struct Lin<A> {
    pub terms: Vec<(A, i64)>,
    pub constant: i64,
}

impl<A: Atom> Lin<A> {
    pub fn constant(c: i64) -> Self {
        Lin {
            terms: vec![],
            constant: c,
        }
    }

    pub fn atom(a: A) -> Self {
        Lin {
            terms: vec![(a, 1)],
            constant: 0,
        }
    }

    /// `self + sign·other`.
    pub fn add(mut self, other: Self, sign: i64) -> Option<Self> {
        self.constant = self
            .constant
            .checked_add(other.constant.checked_mul(sign)?)?;
        for (a, c) in other.terms {
            let c = c.checked_mul(sign)?;
            match self.terms.iter_mut().find(|t| t.0 == a) {
                Some(t) => t.1 = t.1.checked_add(c)?,
                None => self.terms.push((a, c)),
            }
        }
        Some(self.without_zeros())
    }

    /// `k·self`.
    pub fn scale(mut self, k: i64) -> Option<Self> {
        self.constant = self.constant.checked_mul(k)?;
        for t in &mut self.terms {
            t.1 = t.1.checked_mul(k)?;
        }
        Some(self.without_zeros())
    }

    /// The value of a form without atoms (every coefficient zero).
    pub fn as_const(&self) -> Option<i64> {
        self.terms.iter().all(|t| t.1 == 0).then_some(self.constant)
    }

    /// The coefficient of `a`.
    pub fn coeff(&self, a: &A) -> i64 {
        self.terms.iter().find(|t| t.0 == *a).map_or(0, |t| t.1)
    }

    fn without_zeros(mut self) -> Self {
        if A::DROP_ZEROS {
            self.terms.retain(|t| t.1 != 0);
        }
        self
    }
}
