// Siconos 4.4 reference for nsopt's "lzb" method: one LZB multiple impact on a chain of balls.
//
// Drives Siconos' MultipleImpact (OSNSMultipleImpact) exactly as siconos-tutorials 4.4.0
// examples/mechanics/ChainOfBalls/TaperedChainOfBalls-LZBModel.cpp does (EventDriven + LsodarOSI,
// MultipleImpactNSL per contact, no gravity), and stops after the first non-smooth event: an impactor
// (ball 0) reaches, at speed V, a chain of touching balls at rest.
//
// Input (stdin, whitespace separated):
//   nb V gap impulse_step law          (law: BiStiffness or MonoStiffness)
//   nb radii, nb masses, (nb-1) restitutions, (nb-1) stiffnesses, (nb-1) elasticities
// Output (stdout): "v" and the nb post-impact velocities, "p" and the (nb-1) impulses lambda(1),
// "pre" and the nb velocities just before the impact.
//
// Build: g++ -O2 -std=c++17 siconos_multiple_impact.cpp -I/usr/include/siconos/kernel
//        -I/usr/include/siconos/numerics -I/usr/include/siconos -lsiconos_kernel -lsiconos_numerics
// (benchmarks/bench_multiple_impact_siconos.py builds it in a temporary folder and runs it).

#include "SiconosKernel.hpp"
#include <iomanip>
#include <iostream>
#include <vector>

int main()
{
  unsigned int nb;
  double V, gap, dp;
  std::string law;
  std::cin >> nb >> V >> gap >> dp >> law;
  if(!std::cin || nb < 2)
  {
    std::cerr << "bad header" << std::endl;
    return 2;
  }
  std::vector<double> R(nb), mass(nb), e(nb - 1), k(nb - 1), eta(nb - 1);
  for(auto& x : R) std::cin >> x;
  for(auto& x : mass) std::cin >> x;
  for(auto& x : e) std::cin >> x;
  for(auto& x : k) std::cin >> x;
  for(auto& x : eta) std::cin >> x;
  if(!std::cin)
  {
    std::cerr << "bad data" << std::endl;
    return 2;
  }
  try
  {
    double t0 = 0.0, T = 10.0 * gap / V + 1.0, h = 0.001;
    SP::NonSmoothDynamicalSystem chain(new NonSmoothDynamicalSystem(t0, T));
    SP::OneStepIntegrator osi(new LsodarOSI());
    std::vector<SP::DynamicalSystem> balls;
    double pos = 0.0;
    for(unsigned int i = 0; i < nb; ++i)
    {
      if(i == 1) pos = R[0] + gap + R[1];
      else if(i > 1) pos += R[i - 1] + R[i];
      SP::SiconosMatrix M(new SimpleMatrix(1, 1));
      (*M)(0, 0) = mass[i];
      SP::SiconosVector q0(new SiconosVector(1)), v0(new SiconosVector(1));
      (*q0)(0) = pos;
      (*v0)(0) = (i == 0) ? V : 0.0;
      SP::LagrangianLinearTIDS ball(new LagrangianLinearTIDS(q0, v0, M));
      SP::SiconosVector fext(new SiconosVector(1));
      fext->zero();
      ball->setFExtPtr(fext);
      balls.push_back(ball);
      chain->insertDynamicalSystem(ball);
    }
    std::vector<SP::Interaction> inters;
    for(unsigned int j = 0; j + 1 < nb; ++j)
    {
      SP::SimpleMatrix H(new SimpleMatrix(1, 2));
      (*H)(0, 0) = -1.0;
      (*H)(0, 1) = 1.0;
      SP::SiconosVector E(new SiconosVector(1));
      (*E)(0) = -(R[j] + R[j + 1]);
      SP::NonSmoothLaw nslaw(new MultipleImpactNSL(e[j], k[j], eta[j]));
      SP::Relation rel(new LagrangianLinearTIR(H, E));
      SP::Interaction inter(new Interaction(nslaw, rel));
      chain->link(inter, balls[j], balls[j + 1]);
      inters.push_back(inter);
    }
    SP::TimeDiscretisation td(new TimeDiscretisation(t0, h));
    SP::OneStepNSProblem impact(new MultipleImpact(law, dp));
    SP::MultipleImpact mi = std::dynamic_pointer_cast<MultipleImpact>(impact);
    mi->SetSaveData(false);            // lambda(1) then holds the total impulse of the impact
    mi->SetNstepMax(100000000);
    SP::OneStepNSProblem acceleration(new LCP());
    SP::EventDriven sim(new EventDriven(chain, td));
    sim->insertIntegrator(osi);
    sim->insertNonSmoothProblem(impact, SICONOS_OSNSP_ED_IMPACT);
    sim->insertNonSmoothProblem(acceleration, SICONOS_OSNSP_ED_SMOOTH_ACC);
    SP::EventsManager events = sim->eventsManager();
    unsigned int guard = 0;
    while(sim->hasNextEvent() && guard++ < 100000)
    {
      sim->advanceToEvent();
      bool nonsmooth = events->nextEvent()->getType() == 2;
      sim->processEvents();
      double pmax = 0.0;
      for(auto& inter : inters)
        pmax = std::max(pmax, std::abs((*inter->lambda(1))(0)));
      if(nonsmooth && pmax > 0.0)   // the first non-smooth event with an impulse (not the initial contacts)
      {
        std::cout << std::setprecision(17);
        std::cout << "pre";
        for(auto& b : balls)
          std::cout << " " << std::static_pointer_cast<LagrangianDS>(b)->velocityMemory().getSiconosVector(1)(0);
        std::cout << "\nv";
        for(auto& b : balls)
          std::cout << " " << (*std::static_pointer_cast<LagrangianDS>(b)->velocity())(0);
        std::cout << "\np";
        for(auto& inter : inters)
          std::cout << " " << (*inter->lambda(1))(0);
        std::cout << "\nduration " << mi->DurationImpact() << "\n";
        return 0;
      }
    }
    std::cerr << "no impact event" << std::endl;
    return 1;
  }
  catch(...)
  {
    Siconos::exception::process();
    return 1;
  }
}
