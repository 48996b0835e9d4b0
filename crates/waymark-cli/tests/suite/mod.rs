mod cli;
mod crash;
mod support;
